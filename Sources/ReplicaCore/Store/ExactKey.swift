#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key compared and hashed by its UTF-8 bytes, as the stores compare keys.
///
/// Swift's `String` equality is canonical equivalence: "caf\u{E9}" and "cafe\u{301}" are equal
/// strings but two keys in the store (and on every other node), so a dictionary indexed by keys
/// must not use `String` itself, or one key's value would answer for the other's.
public struct ExactKey: Hashable, Sendable, CustomStringConvertible {
    public let string: String

    public init(_ string: String) { self.string = string }

    public static func == (a: Self, b: Self) -> Bool { a.string.hasSameBytes(as: b.string) }

    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { string }
}

extension String {
    /// Whether both strings are the same UTF-8 bytes: one `memcmp` of contiguous storage, on
    /// the merge's path (a loop over the `utf8` views measured slower: docs/performance.md).
    func hasSameBytes(as other: String) -> Bool {
        var (a, b) = (self, other)
        return a.withUTF8 { x in
            b.withUTF8 { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) }
        }
    }

    /// Whether this key starts with `prefix` as the stores match prefixes: by bytes. (`hasPrefix`
    /// compares characters by canonical equivalence: "cafe\u{301}/x" has the prefix "caf\u{E9}/".)
    func hasKeyPrefix(_ prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }
}
