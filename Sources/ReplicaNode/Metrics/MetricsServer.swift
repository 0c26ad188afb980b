import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ReplicaCore

/// `serve --metrics HOST:PORT`: the node's swift-metrics, kept by swift-prometheus, served as
/// `GET /metrics` in the Prometheus text exposition format over SwiftNIO's HTTP/1 server.
final class MetricsServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    /// The address actually bound (port 0 picks a free one).
    var localAddress: SocketAddress? { channel.localAddress }

    /// Makes swift-prometheus the swift-metrics backend of this process, with histogram buckets
    /// sized for commits (tens of microseconds to seconds) and their batches (1 to 8,192
    /// entries). Call it once, before creating the replica whose metrics it is to see.
    static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[ReplicaMetricName.commitDuration] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .seconds(1),
        ]
        factory.valueHistogramBuckets[ReplicaMetricName.commitBatchEntries] = [1, 4, 16, 64, 256, 1024, 4096, 8192]
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// Binds `endpoint` and serves `registry` until `stop()`.
    init(endpoint: Endpoint, registry: PrometheusCollectorRegistry) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(MetricsHandler(registry: registry))
                    }
                }
                .bind(host: endpoint.host, port: Int(endpoint.port))
                .get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
    }

    /// Why binding failed, in one line: the system's reason for a socket error (`address
    /// already in use`), not NIO's description of the call that failed.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return FileSystemReason.systemMessage(error.errnoCode) }
        return "\(error)"
    }

    func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Answers `GET /metrics` (and `HEAD`) with the registry's exposition; 404 or 405 otherwise.
private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let request else { return }
            self.request = nil
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        let status: HTTPResponseStatus
        var body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        if path != "/metrics" {
            (status, body) = (.notFound, Array("not found: the metrics are at /metrics\n".utf8))
        } else if request.method != .GET && request.method != .HEAD {
            (status, body) = (.methodNotAllowed, Array("use GET\n".utf8))
        } else {
            (status, body) = (.ok, registry.emitToBuffer())
            contentType = "text/plain; version=0.0.4; charset=utf-8"
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(body.count))
        if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
        if request.method == .HEAD { body = [] }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !request.isKeepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
