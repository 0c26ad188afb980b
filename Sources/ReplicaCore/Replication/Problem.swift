import Foundation

/// A load or save error that a user or operator must be able to see, until it clears.
public struct Problem: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case load, save }

    public var kind: Kind
    /// The key (or file) concerned.
    public var subject: String
    public var message: String
    public var since: Date

    public init(kind: Kind, subject: String, message: String, since: Date = Date()) {
        self.kind = kind
        self.subject = subject
        self.message = message
        self.since = since
    }
}
