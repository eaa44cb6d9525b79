import Foundation

extension TokenStore {
    /// Why a token refresh failed without an error of its own: the refresh signal sent nothing,
    /// or the store refused or stopped it.
    public enum RefreshError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError, DescribedError {
        /// The refresh signal finished without a value.
        case noToken
        /// The refresh's own request was answered 401 and asked this store for a fresh token: it
        /// would wait for itself forever. The refresh (and every request waiting for it) fails
        /// with this error instead; the credentials cannot be renewed and the user must sign in
        /// again.
        case reentrantRefresh
        /// The refresh did not end within ``RefreshLimits/deadline``; it was cancelled.
        case timedOut
        /// More than ``RefreshLimits/maxRefreshes`` refreshes started within
        /// ``RefreshLimits/window``: the server keeps rejecting fresh tokens, so the store stops
        /// asking until the window has passed.
        case tooManyRefreshes

        /// What went wrong and what to do.
        public var description: String {
            switch self {
            case .timedOut:
                return "TokenStore: the token refresh did not complete within its deadline and was cancelled."
            case .tooManyRefreshes:
                return "TokenStore: too many token refreshes in a short time (the server keeps rejecting fresh tokens); "
                    + "not refreshing again until the window has passed."
            case .noToken:
                return "TokenStore: the refresh signal finished without sending a token; make it send the new AuthToken."
            case .reentrantRefresh:
                return "TokenStore: the token refresh was itself answered 401 Unauthorized and asked the same store for a "
                    + "fresh token, which would wait for itself. The refresh failed; sign the user in again."
            }
        }
    }
}
