import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// The production transport: one long-lived `URLSession`.
///
/// Cancelling a subscription cancels its task.
public final class URLSessionTransport: HTTPTransport {
    /// A transport with the default session configuration.
    public static let shared = URLSessionTransport()

    private let session: URLSession

    /// Creates a transport with its own session built from `configuration`.
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(configuration: configuration)
    }

    public func send(_ request: URLRequest) -> Signal<HTTPResponse, any Error> {
        let session = self.session
        return Signal { observer in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    observer.fail(error)
                } else if let response = response as? HTTPURLResponse {
                    observer.send(HTTPResponse(data: data ?? Data(), response: response, request: request))
                    observer.finish()
                } else {
                    observer.fail(URLError(.badServerResponse))
                }
            }
            task.resume()
            return { task.cancel() }
        }
    }
}
