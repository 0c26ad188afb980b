@testable import ReplicaCore
import Testing

/// `HOST:PORT` parsing: a node's address needs PORT + 1 as well (its sync socket); a single
/// port (`--metrics`) may be the last one.
struct EndpointTests {
    @Test(arguments: [
        ("127.0.0.1:7000", "127.0.0.1:7000", "127.0.0.1:7000"),
        ("[::1]:7000", "[::1]:7000", "[::1]:7000"),
        ("127.0.0.1:65534", "127.0.0.1:65534", "127.0.0.1:65534"),
        ("127.0.0.1:65535", nil, "127.0.0.1:65535"),
        ("127.0.0.1:0", nil, nil),
        ("127.0.0.1:65536", nil, nil),
        (":7000", nil, nil),
        ("host 1:7000", nil, nil),
        ("7000", nil, nil),
    ] as [(String, String?, String?)])
    func parses(text: String, asNode: String?, asSinglePort: String?) {
        #expect(Endpoint(text)?.description == asNode)
        #expect(Endpoint(singlePort: text)?.description == asSinglePort)
    }
}
