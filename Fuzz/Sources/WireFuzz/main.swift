import Foundation
import ReplicaCore

/// Every input is fed to the envelope and sync-message decoders, both as a message body and as
/// PUB/SUB frames, and to the discovery-beacon decoder. Decoding must never trap, and whatever decodes must encode back to exactly
/// the same bytes (the format is canonical), so a decoder that accepts something it should not
/// shows up as a crash here.
func fuzzWireDecoders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let codec = WireCodec()
    if let message = try? codec.decode(bytes) {
        precondition(codec.encode(message) == bytes, "decode/encode is not a round trip")
    }
    if let beacon = try? codec.decodeBeacon(bytes) {
        precondition(codec.encode(beacon) == bytes, "beacon decode/encode is not a round trip")
    }
    // As a PUB/SUB message: a topic, then a body.
    if let message = try? codec.decodePublished(bytes) {
        precondition(codec.publishFrame(message) == bytes, "published messages are not a round trip")
    }
    return 0
}

// libFuzzer's driver, linked by -sanitize=fuzzer. SwiftPM supplies `main` for an executable
// target, so libFuzzer's own `main` is not used: this one hands over to the driver.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runFuzzerDriver(&argc, &argv) { fuzzWireDecoders($0, $1) })
