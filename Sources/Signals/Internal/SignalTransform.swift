/// The transform of `flatMap` and `flatMapLatest`, wrapped in a struct so that moving it in and
/// out of a lock's critical section (generic in its result) does not allocate a reabstraction
/// thunk every time.
@usableFromInline
struct SignalTransform<Input: Sendable, Output: Sendable, Failure: Error> {
    @usableFromInline let call: @Sendable (Input) -> Signal<Output, Failure>

    @inlinable
    init(call: @escaping @Sendable (Input) -> Signal<Output, Failure>) {
        self.call = call
    }
}
