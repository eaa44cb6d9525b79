extension Signal {
    /// Pairs the values of this signal and `other` in order: the first value of each, then the
    /// second of each, and so on.
    ///
    /// Guarantees:
    /// - Values that have no partner yet wait (without limit) for one.
    /// - Finishes as soon as no further pair is possible: when one signal has finished and none of
    ///   its values is left waiting. The other signal is then cancelled.
    /// - The first failure of either signal cancels the other and fails the result once.
    /// - Cancelling cancels both signals.
    /// - Pairs are delivered one at a time and in order, even when the two signals send on
    ///   different threads.
    public func zip<Other>(_ other: Signal<Other, Failure>) -> Signal<(Output, Other), Failure> {
        pairing(other, by: ZipRule<Output, Other>.self)
    }
}

/// `zip`'s rule: values wait in order for a partner; pairs are made first with first; no pair is
/// left possible once a side has finished with none of its values waiting.
struct ZipRule<Left: Sendable, Right: Sendable>: PairingRule {
    private var left = FIFOBuffer<Left>()
    private var right = FIFOBuffer<Right>()

    init() {}

    mutating func pair(afterLeft value: Left) -> (pair: (Left, Right)?, replaced: Left?) {
        left.append(value)
        return (nextPair(), nil)
    }

    mutating func pair(afterRight value: Right) -> (pair: (Left, Right)?, replaced: Right?) {
        right.append(value)
        return (nextPair(), nil)
    }

    func isExhausted(leftFinished: Bool, rightFinished: Bool) -> Bool {
        (leftFinished && left.isEmpty) || (rightFinished && right.isEmpty)
    }

    /// The oldest waiting value of each side, if both sides have one.
    private mutating func nextPair() -> (Left, Right)? {
        guard !left.isEmpty && !right.isEmpty, let first = left.popFirst(), let second = right.popFirst() else {
            return nil
        }
        return (first, second)
    }
}
