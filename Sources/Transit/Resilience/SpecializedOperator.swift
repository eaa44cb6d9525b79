import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// Runs a generic operator's body specialised for ``HTTPResponse`` when the signal carries
/// responses: the common case, since the resilience operators go right after
/// ``Signal/catchHTTPErrors()``.
///
/// A public generic operator called from another module runs unspecialised: every use of a type
/// that depends on `Output` (the operator's state, `Event<Output, any Error>`, the observers) asks
/// the runtime for that type's metadata, a hash-table look-up of a few hundred instructions. In a
/// retry operator that was about 60 look-ups per request, a quarter of the policies' whole cost.
/// Inside this module the compiler specialises the body for `HTTPResponse`, so checking the type
/// once at the entry point and calling that specialisation removes them.
enum SpecializedOperator {
    /// `responses(signal)` when `Output` is ``HTTPResponse``, else `generic(signal)`.
    ///
    /// The casts are identities: they happen only when `Output` *is* `HTTPResponse`, so the
    /// signal and the result are the very same types.
    @inline(__always)
    static func forResponses<Output: Sendable>(
        _ signal: Signal<Output, any Error>,
        generic: (Signal<Output, any Error>) -> Signal<Output, any Error>,
        responses: (Signal<HTTPResponse, any Error>) -> Signal<HTTPResponse, any Error>
    ) -> Signal<Output, any Error> {
        guard Output.self == HTTPResponse.self else { return generic(signal) }
        let specialized = responses(unsafeBitCast(signal, to: Signal<HTTPResponse, any Error>.self))
        return unsafeBitCast(specialized, to: Signal<Output, any Error>.self)
    }
}
