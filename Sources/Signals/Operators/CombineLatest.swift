extension Signal {
    /// Sends the latest value of each signal, as a pair, every time either sends a value — once
    /// both have sent at least one.
    ///
    /// Guarantees:
    /// - Nothing is sent until both signals have sent a value; values of one side that arrive
    ///   before the other's first value are remembered (only the latest).
    /// - Finishes when both signals have finished, or as soon as one finishes without having
    ///   sent any value (no pair can ever be formed; the other is then cancelled).
    /// - The first failure of either signal cancels the other and fails the result once.
    /// - Cancelling cancels both signals.
    /// - Pairs are delivered one at a time, in the order the values were received, even when the
    ///   two signals send on different threads.
    public func combineLatest<Other>(_ other: Signal<Other, Failure>) -> Signal<(Output, Other), Failure> {
        pairing(other, by: CombineLatestRule<Output, Other>.self)
    }
}

/// `combineLatest`'s rule: each side keeps only its latest value; every value makes a pair once
/// both sides have one; nothing more can be sent once both sides have finished, or one has
/// finished without a value.
struct CombineLatestRule<Left: Sendable, Right: Sendable>: PairingRule {
    private var left: Left?
    private var right: Right?

    init() {}

    mutating func pair(afterLeft value: Left) -> (pair: (Left, Right)?, replaced: Left?) {
        defer { left = value }
        return (right.map { (value, $0) }, left)
    }

    mutating func pair(afterRight value: Right) -> (pair: (Left, Right)?, replaced: Right?) {
        defer { right = value }
        return (left.map { ($0, value) }, right)
    }

    func isExhausted(leftFinished: Bool, rightFinished: Bool) -> Bool {
        (leftFinished && rightFinished) || (leftFinished && left == nil) || (rightFinished && right == nil)
    }
}
