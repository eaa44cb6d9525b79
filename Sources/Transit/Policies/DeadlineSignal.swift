import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Failure == any Error {
    /// Fails with `URLError(.timedOut)`, carried by a ``TransportError`` for `request` as a
    /// transport's failures are (the redirecting exchange annotates those), and cancels the
    /// upstream if it has not ended within `deadline` of the subscription, timed by `deadlines`.
    /// Unlike `timeout`, values do not restart the clock.
    func within(
        _ deadline: Duration,
        deadlines: Deadlines,
        for request: TransportRequest,
        events: HTTPEventSink?
    ) -> Signal<Output, any Error> {
        let upstream = self
        return Signal { observer in
            let scope = CancellationToken()
            let id = deadlines.arm(deadline, for: request, events: events, cancelling: scope, failing: observer)
            upstream.observe(observer, in: scope)
            return {
                deadlines.remove(id)
                scope.cancel()
            }
        }
    }
}

extension Deadlines {
    /// Arms one request's `deadline`: when it passes, `scope` (the request's upstream) is
    /// cancelled and `observer` fails with `URLError(.timedOut)` in a ``TransportError`` for
    /// `request`. Returns the identifier for ``remove(_:)``, which the stage's teardown calls.
    ///
    /// The one arming of every stage that times a request: `within(_:deadlines:for:events:)`
    /// (streams and downloads), `collectResponse(for:maxBytes:events:deadline:deadlines:)` (a
    /// coalesced flight) and the buffered exchange.
    func arm<Value>(
        _ deadline: Duration,
        for request: TransportRequest,
        events: HTTPEventSink?,
        cancelling scope: CancellationToken,
        failing observer: Observer<Value, any Error>
    ) -> UInt64 {
        // The failure keeps the request's form alone: the timer captures that, not the request.
        let form = request.form
        return add(after: deadline) {
            scope.cancel()
            observer.fail(TransportError.annotating(Self.deadlinePassed(deadline), sentWith: TransportRequest(form: form)))
        }
    }

    /// The error of a request that did not complete within `deadline`.
    static func deadlinePassed(_ deadline: Duration) -> URLError {
        URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: "The request did not complete within its deadline of \(deadline); it was cancelled.",
        ])
    }
}
