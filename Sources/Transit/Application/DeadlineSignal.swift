import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Failure == any Error {
    /// Fails with `URLError(.timedOut)` and cancels the upstream if it has not ended within
    /// `deadline` of the subscription, timed by `deadlines`. Unlike `timeout`, values do not
    /// restart the clock.
    func within(_ deadline: Duration, deadlines: Deadlines) -> Signal<Output, any Error> {
        let upstream = self
        return Signal { observer in
            let scope = CancellationToken()
            let id = deadlines.add(after: deadline) {
                scope.cancel()
                observer.fail(Self.deadlinePassed(deadline))
            }
            upstream.observe(observer, in: scope)
            return {
                deadlines.remove(id)
                scope.cancel()
            }
        }
    }

    /// The error of a request that did not complete within `deadline`.
    static func deadlinePassed(_ deadline: Duration) -> URLError {
        URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The request did not complete within its deadline of \(deadline); it was cancelled.",
        ])
    }
}
