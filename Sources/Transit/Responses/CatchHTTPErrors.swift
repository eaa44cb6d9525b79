import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension Signal where Output == HTTPResponse, Failure == any Error {
    /// Fails on every status code of 400 or above: with an ``HTTPClientError`` for 4xx and an
    /// ``HTTPServerError`` for 5xx (and beyond). The error keeps the response, so its headers and
    /// body stay readable. Responses below 400 pass through.
    public func catchHTTPErrors() -> Signal<HTTPResponse, any Error> {
        tryMap { response in
            if let error = makeHTTPError(for: response) { throw error }
            return response
        }
    }
}
