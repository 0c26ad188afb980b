@testable import ReplicaNode
import Testing

/// Sizes in `status` (the disk line): binary units, one decimal.
@Suite struct ByteCountTests {
    @Test(arguments: [
        (UInt64(0), "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (3 << 20, "3.0 MiB"),
        ((118 << 30) + (1 << 29), "118.5 GiB"), (5 << 40, "5.0 TiB"), (UInt64.max, "16384.0 PiB"),
    ] as [(UInt64, String)])
    func sizesReadAsPeopleSayThem(_ row: (UInt64, String)) {
        #expect(ByteCount.text(row.0) == row.1)
    }
}
