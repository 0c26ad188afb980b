import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 GET over a plain TCP socket: what Prometheus does to scrape a node.
func httpGet(host: String = "127.0.0.1", port: UInt16, path: String) throws -> (status: Int, headers: String, body: String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HTTPFailure(message: "socket: \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, host, &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw HTTPFailure(message: "connect to \(host):\(port) failed (errno \(errno))") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard write(fd, request, request.count) == request.count else { throw HTTPFailure(message: "write failed") }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        response += buffer[0..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { throw HTTPFailure(message: "no HTTP header in \(text)") }
    let head = String(text[..<split.lowerBound])
    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
    return (status, head, String(text[split.upperBound...]))
}

struct HTTPFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Samples of the Prometheus text exposition format (version 0.0.4), checked line by line:
/// every line is a `# TYPE`/`# HELP` comment or `name{label="value",...} number`.
struct PrometheusExposition {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    var types: [String: String] = [:]
    var samples: [Sample] = []

    init(parsing text: String) throws {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                    throw HTTPFailure(message: "bad TYPE line: \(line)")
                }
                types[String(parts[2])] = String(parts[3])
                continue
            }
            if line.hasPrefix("#") { continue }
            samples.append(try Self.sample(line))
        }
    }

    private static func sample(_ line: Substring) throws -> Sample {
        var labels: [String: String] = [:]
        let name: Substring
        var rest: Substring
        if let brace = line.firstIndex(of: "{") {
            name = line[..<brace]
            guard let close = line.lastIndex(of: "}") else { throw HTTPFailure(message: "unclosed labels: \(line)") }
            var text = line[line.index(after: brace)..<close]
            while !text.isEmpty {
                guard let equals = text.firstIndex(of: "="), text[text.index(after: equals)] == "\"" else {
                    throw HTTPFailure(message: "bad label in \(line)")
                }
                let key = String(text[..<equals])
                var index = text.index(equals, offsetBy: 2)
                var value = ""
                while text[index] != "\"" {
                    if text[index] == "\\" { index = text.index(after: index) }
                    value.append(text[index])
                    index = text.index(after: index)
                }
                labels[key] = value
                text = text[text.index(after: index)...]
                if text.first == "," { text = text.dropFirst() }
            }
            rest = line[line.index(after: close)...]
        } else {
            guard let space = line.firstIndex(of: " ") else { throw HTTPFailure(message: "no value: \(line)") }
            name = line[..<space]
            rest = line[space...]
        }
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }), !name.isEmpty else {
            throw HTTPFailure(message: "bad metric name in \(line)")
        }
        rest = rest.drop(while: { $0 == " " })
        let valueText = rest.split(separator: " ").first.map(String.init) ?? ""
        let value: Double? = switch valueText {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: Double(valueText)
        }
        guard let value else { throw HTTPFailure(message: "bad value in \(line)") }
        return Sample(name: String(name), labels: labels, value: value)
    }

    /// The value of the one sample named `name` whose labels include `labels`.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }?.value
    }
}

/// Scrapes `http://127.0.0.1:PORT/metrics` and parses it.
func scrapeMetrics(port: UInt16) throws -> PrometheusExposition {
    let response = try httpGet(port: port, path: "/metrics")
    guard response.status == 200 else { throw HTTPFailure(message: "GET /metrics: status \(response.status)") }
    return try PrometheusExposition(parsing: response.body)
}
