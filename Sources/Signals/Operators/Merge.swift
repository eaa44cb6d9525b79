extension Signal {
    /// Subscribes to every signal in `signals`, in order, and forwards every value as it arrives.
    ///
    /// - Finishes when every signal has finished (at once for an empty array).
    /// - The first failure cancels every other signal and fails the result once.
    /// - Cancelling cancels every signal (each one's teardown runs).
    /// - Values from signals running on different threads are delivered one at a time; the
    ///   values of one signal keep their order.
    public static func merge(_ signals: [Signal<Output, Failure>]) -> Signal<Output, Failure> {
        Signal<Signal<Output, Failure>, Failure>(sequence: signals).flatMap { $0 }
    }
}
