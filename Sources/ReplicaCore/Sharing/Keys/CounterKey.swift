/// The key behind `.counter("name")`: an `EntryFamilyKey` over `CounterFamily`.
public typealias CounterKey = EntryFamilyKey<CounterFamily>

extension SharedReaderKey {
    /// A counter that never loses an increment: `Shared<Int>` over one slot per replica
    /// incarnation (see `CounterFamily`). `withLock { $0 += 5 }` saves a delta of +5 to this
    /// replica's slot; the value is the sum of every slot, remote ones included.
    ///
    /// The value starts from the stored sum (0 when nothing is stored): the initial value given
    /// to `@Shared` is not used, as a counter's "no value" is 0.
    public static func counter(_ name: String, on replica: Replica? = nil) -> Self where Self == CounterKey {
        CounterKey(CounterFamily(name), on: replica)
    }
}
