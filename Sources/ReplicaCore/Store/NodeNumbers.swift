/// The node ids an index has seen, each given a small number once.
///
/// Every slot of `StoreIndex` names the node of its version. Stored as a `NodeID` that is a
/// 16-byte string, reference-counted when longer than 15 bytes, copied into and out of the
/// table on every record; as a number it is 4 bytes and never counted. A cluster has a handful
/// of nodes, so the table stays tiny.
struct NodeNumbers {
    private var ids: [NodeID] = []
    private var numbers: [NodeID: UInt32] = [:]
    /// The last node numbered: a batch usually carries one origin's entries, so most lookups end
    /// at one string comparison instead of a hash.
    private var last: (id: NodeID, number: UInt32)?

    subscript(number: UInt32) -> NodeID { ids[Int(number)] }

    /// The number of `id`, if it was ever given one.
    func existingNumber(for id: NodeID) -> UInt32? { numbers[id] }

    mutating func number(for id: NodeID) -> UInt32 {
        if let last, last.id == id { return last.number }
        let number: UInt32
        if let known = numbers[id] {
            number = known
        } else {
            number = UInt32(ids.count)
            ids.append(id)
            numbers[id] = number
        }
        last = (id, number)
        return number
    }
}
