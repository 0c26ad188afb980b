/// When the WAL checkpointer runs a pass, and whether the pass also rewinds the log.
///
/// **Small, frequent passes.** A checkpoint fsyncs the log before copying it, and on ext4 the
/// writer's next append waits while that fsync allocates the blocks of everything written
/// since the last one (the inode's block map is locked): the longer the wait between passes,
/// the longer the stall. Measured at 10,000 saves/s: one pass every 2 s gave a p99 of 150-170
/// ms, every 500 ms 80-120 ms, every 50-100 ms 9-20 ms. So a pass runs as soon as the writer has
/// added `passAfterGrowthBytes` to the log (counted in the frames its commits added, so a log
/// rewound and written over from its start counts too), and at least every `period` while it
/// changes.
///
/// **A bounded log.** A PASSIVE checkpoint never waits for the writer, but under sustained
/// writes it never catches up either: the writer appends while it copies, so the log is never
/// fully copied when the next commit starts, SQLite never rewinds it, and it grows without
/// bound (97 MB after a 4 s benchmark of 500,000 saves, and on until the disk is full). So once
/// the log holds `restartAboveBytes`, the pass follows its PASSIVE copy with a RESTART: it waits
/// its turn for the writer lock, copies the few frames appended since, syncs, and has the next
/// commit write the log from its start again. The file then stays about that size with its
/// blocks allocated, so commits stop allocating. The writer waits for that one short copy and
/// sync, once per `restartAboveBytes` written.
struct WALCheckpointPolicy: Equatable, Sendable {
    /// The log size (frames in use, not the file's size, which a rewind keeps) that asks for a
    /// rewind: large enough that the writer's wait is rare, small enough to bound the disk used.
    var restartAboveBytes: Int = 128 << 20
    /// Log written since the last pass that calls for the next one at once.
    var passAfterGrowthBytes: Int = 1 << 20
    /// The longest time between passes while anything is written (a trickle of commits).
    var period: Duration = .milliseconds(500)

    /// Whether a pass is due, given the frames in the log now and at the last pass (as the
    /// writer's commits reported them), the commits since, and the time since the last pass.
    /// A log that has not been written needs no pass.
    func passDue(logFrames: Int, atLastPass lastFrames: Int, pageSize: Int, commitsSince: Int, sinceLastPass elapsed: Duration) -> Bool {
        guard commitsSince > 0 else { return false }
        // Fewer frames than at the last pass: the log was rewound, and everything in it is new.
        let written = logFrames >= lastFrames ? logFrames - lastFrames : logFrames
        return written * Self.frameBytes(pageSize: pageSize) >= passAfterGrowthBytes || elapsed >= period
    }

    /// Whether to rewind the log after a PASSIVE pass that found `logFrames` frames of
    /// `pageSize`-byte pages in it.
    func restarts(afterPassiveWithLogFrames logFrames: Int, pageSize: Int) -> Bool {
        logFrames > 0 && logFrames * Self.frameBytes(pageSize: pageSize) >= restartAboveBytes
    }

    /// A log frame: a page plus its 24-byte header.
    static func frameBytes(pageSize: Int) -> Int { pageSize + 24 }
}
