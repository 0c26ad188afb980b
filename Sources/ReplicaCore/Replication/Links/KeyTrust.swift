/// Which CURVE keys this node trusts and whose they are; with no CURVE settings (insecure),
/// every member is admitted.
struct KeyTrust {
    let curve: CurveSecurity?
    var trustedKeys: Set<[UInt8]>
    var keyOwners: [[UInt8]: NodeID]

    init(curve: CurveSecurity?) {
        self.curve = curve
        (trustedKeys, keyOwners) = Self.raw(curve)
    }

    /// Raw trusted keys and their owners, from CURVE settings.
    static func raw(_ curve: CurveSecurity?) -> (Set<[UInt8]>, [[UInt8]: NodeID]) {
        guard let curve else { return ([], [:]) }
        let keys = Set(curve.trusted.compactMap(CurveKeyPair.rawBytes(ofZ85:)))
        var owners: [[UInt8]: NodeID] = [:]
        for (key, node) in curve.keyOwners {
            if let raw = CurveKeyPair.rawBytes(ofZ85: key) { owners[raw] = node }
        }
        return (keys, owners)
    }

    /// Whether this node dials `record` and lets it connect: its key is trusted, and not as
    /// another node's.
    func admits(_ record: MemberRecord) -> Bool {
        guard curve != nil else { return true }
        guard let key = record.publicKey, trustedKeys.contains(key) else { return false }
        if let owner = keyOwners[key], owner != record.node { return false }
        return true
    }
}
