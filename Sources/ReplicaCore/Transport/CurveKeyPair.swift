import CZMQ

/// A CURVE key pair in Z85 text (40 characters each), as libzmq and `replica-node keygen` use.
public struct CurveKeyPair: Sendable, Equatable {
    public var publicKey: String
    public var secretKey: String

    /// A new random key pair (libzmq built with libsodium).
    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw .last("zmq_curve_keypair") }
        return CurveKeyPair(publicKey: Self.text(of: publicKey), secretKey: Self.text(of: secretKey))
    }

    /// The key pair of a secret key (the public key is derived from it).
    public init(secretKey: String) throws(ZMQError) {
        guard Self.isValidKey(secretKey) else { throw ZMQError(code: EINVAL, operation: "curve secret key") }
        var publicKey = [CChar](repeating: 0, count: 41)
        let derived = secretKey.withCString { zmq_curve_public(&publicKey, $0) }
        guard derived == 0 else { throw .last("zmq_curve_public") }
        self.publicKey = Self.text(of: publicKey)
        self.secretKey = secretKey
    }

    public init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Z85 text of a 32-byte key: 40 characters from the Z85 alphabet.
    public static func isValidKey(_ key: String) -> Bool {
        let alphabet = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
        return key.count == 40 && key.allSatisfy(alphabet.contains)
    }

    /// The 32 raw bytes of a Z85 key (what ZAP requests carry), or nil if invalid.
    public static func rawBytes(ofZ85 key: String) -> [UInt8]? {
        guard isValidKey(key) else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard key.withCString({ zmq_z85_decode(&bytes, $0) }) != nil else { return nil }
        return bytes
    }

    /// The Z85 text of 32 raw key bytes.
    public static func z85(ofRaw bytes: [UInt8]) -> String? {
        guard bytes.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard zmq_z85_encode(&text, bytes, 32) != nil else { return nil }
        return Self.text(of: text)
    }

    /// The text of a NUL-terminated C buffer that libzmq filled (Z85 is ASCII).
    static func text(of buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
