import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit
import TransitTesting

/// Defect: the method of a failed attempt travelled as a string key in `URLError.userInfo`
/// (`HTTPClient.requestMethodKey`): Transit carried its own metadata on a type it does not own.
/// A client now fails with a ``TransportError`` that carries the request as sent.
@Suite("Transport errors from a client")
struct TransportErrorTests {
    private struct API: RESTAPI {
        let baseURL = "https://api.example.test/v1"
        let client: HTTPClient
    }

    private func failure(
        of method: HTTPMethod,
        answer: StubResponse = .failure(URLError(.timedOut)),
        modifier: @escaping RequestModifier = { $0 }
    ) throws -> any Error {
        let transport = StubTransport()
        transport.stub(method, path: "/v1/items/1").thenRespond(answer)
        let api = API(client: HTTPClient(transport: transport) { $0.defaultHeaders = ["X-Client": "tests"] })
        let probe = RequestProbe(api.request(method: method, endpoint: "items/1", modifier: modifier))
        #expect(probe.terminalCount == 1)
        return try #require(probe.failure)
    }

    @Test("a failed attempt's error carries no Transit metadata in userInfo")
    func noStringKeysInUserInfo() throws {
        let failure = try failure(of: .put)
        #expect(!(failure is URLError), "the transport's URLError is wrapped in Transit's own error type")
        let error = try #require(failure as? TransportError)
        let underlying = try #require(error.urlError)
        #expect(underlying.userInfo.keys.allSatisfy { !$0.hasPrefix("Transit") }, "\(underlying.userInfo.keys)")
    }

    @Test("the error gives the request as sent, its method and the URLError code", arguments: [
        (HTTPMethod.put, URLError.Code.timedOut), (.post, .networkConnectionLost), (.get, .cannotConnectToHost),
        ("PURGE", .notConnectedToInternet),
    ])
    func carriesTheRequest(method: HTTPMethod, code: URLError.Code) throws {
        let error = try #require(try failure(of: method, answer: .failure(URLError(code))) {
            try $0.settingValue("42", forHTTPHeaderField: "X-Attempt")
        } as? TransportError)
        #expect(error.method == method)
        #expect(error.code == code)
        #expect(error.urlError?.code == code)
        #expect(error.request.httpMethod == method.rawValue)
        #expect(error.request.url?.absoluteString == "https://api.example.test/v1/items/1")
        // As sent: the modifier's header and the client's default header are both there.
        #expect(error.request.value(forHTTPHeaderField: "X-Attempt") == "42")
        #expect(error.request.value(forHTTPHeaderField: "X-Client") == "tests")
    }

    @Test("a TLS failure libcurl reports as .unknown gets the code Apple platforms give", arguments: [
        ("SSL certificate problem: self-signed certificate", URLError.Code.serverCertificateUntrusted),
        ("SSL certificate problem: self signed certificate", .serverCertificateUntrusted),
        ("SSL certificate problem: unable to get local issuer certificate", .serverCertificateUntrusted),
        ("SSL certificate problem: self-signed certificate in certificate chain", .serverCertificateHasUnknownRoot),
        ("SSL certificate problem: certificate has expired", .serverCertificateHasBadDate),
        ("SSL certificate problem: certificate is not yet valid", .serverCertificateNotYetValid),
        ("SSL: no alternative certificate subject name matches target host name 'localhost'", .serverCertificateUntrusted),
        ("SSL: no alternative certificate subject name matches target ipv4 address '127.0.0.1'", .serverCertificateUntrusted),
        ("SSL: certificate subject name 'other.test' does not match target host name 'api.test'", .serverCertificateUntrusted),
        ("OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:8443", .secureConnectionFailed),
        ("error:0A00010B:SSL routines::wrong version number", .secureConnectionFailed),
        ("error:0A000086:SSL routines::certificate verify failed", .serverCertificateUntrusted),
        ("transfer closed with 10 bytes remaining to read", .unknown),
        ("something else went wrong", .unknown),
    ])
    func classifiesTLSFailures(message: String, code: URLError.Code) throws {
        let original = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: message])
        let error = try #require(try failure(of: .get, answer: .failure(original)) as? TransportError)
        #expect(error.code == code)
        #expect(error.urlError?.localizedDescription == message)
        if code != .unknown {
            #expect((error.urlError?.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == URLError.Code.unknown.rawValue)
        }
    }

    @Test("a more precise code than .unknown is kept whatever the message says")
    func keepsPreciseCodes() throws {
        let timedOut = URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: certificate has expired"])
        let error = try #require(try failure(of: .get, answer: .failure(timedOut)) as? TransportError)
        #expect(error.code == .timedOut)
        let refined = URLError(.secureConnectionFailed, userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: certificate has expired"])
        let expired = try #require(try failure(of: .get, answer: .failure(refined)) as? TransportError)
        #expect(expired.code == .serverCertificateHasBadDate)
        #expect(expired.description.contains("server certificate has bad date"))
        // A certificate code is never made vaguer by a message about the handshake.
        let untrusted = URLError(.serverCertificateUntrusted, userInfo: [
            NSLocalizedDescriptionKey: "handshakeFailed(error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED)",
        ])
        let kept = try #require(try failure(of: .get, answer: .failure(untrusted)) as? TransportError)
        #expect(kept.code == .serverCertificateUntrusted)
    }

    @Test("an error that is not a URLError is wrapped too; code and urlError are nil")
    func nonURLErrorUnderlying() throws {
        struct Broken: Error {}
        let error = try #require(try failure(of: .get, answer: .failure(Broken())) as? TransportError)
        #expect(error.underlying is Broken)
        #expect(error.urlError == nil)
        #expect(error.code == nil)
        #expect(error.method == .get)
        #expect(!RetryPolicy().isTransient(error))
    }

    @Test("an HTTP error status is not a transport error: it arrives as a response")
    func httpStatusIsNotWrapped() throws {
        let transport = StubTransport()
        transport.stub().thenRespond(.status(503))
        let probe = RequestProbe(API(client: HTTPClient(transport: transport)).get(endpoint: "x").catchHTTPErrors())
        #expect(probe.failure is HTTPServerError)
    }

    @Test("an error that already is a TransportError passes through a second client unchanged")
    func alreadyWrappedPassesThrough() throws {
        let inner = StubTransport()
        inner.stub().thenRespond(.failure(URLError(.timedOut)))
        let innerClient = HTTPClient(transport: inner)
        /// A transport that sends through another client (a decorator, say).
        struct Relay: HTTPTransport {
            let client: HTTPClient
            func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
                var marked = request.urlRequest
                marked.setValue("inner", forHTTPHeaderField: "X-Hop")
                return client.stream(marked)
            }
        }
        let outer = HTTPClient(transport: Relay(client: innerClient))
        let probe = RequestProbe(outer.send(URLRequest(url: URL(string: "https://api.example.test/x")!)))
        let error = try #require(probe.failure as? TransportError)
        #expect(error.underlying is URLError, "not wrapped twice")
        #expect(error.request.value(forHTTPHeaderField: "X-Hop") == "inner", "the request the innermost transport saw")
    }

    @Test("RetryPolicy reads the method and the code from a TransportError, and still from a bare URLError")
    func retryPolicyReadsTransportErrors() throws {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), jitter: .none)
        let get = TransportError(request: URLRequest(url: URL(string: "https://h.test/a")!), underlying: URLError(.timedOut))
        var postRequest = URLRequest(url: URL(string: "https://h.test/a")!)
        postRequest.httpMethod = "POST"
        let post = TransportError(request: postRequest, underlying: URLError(.timedOut))
        let refusedPost = TransportError(request: postRequest, underlying: URLError(.cannotConnectToHost))
        #expect(policy.retryDelay(after: get, attempt: 1) == .seconds(1))
        #expect(policy.retryDelay(after: post, attempt: 1) == nil, "a timed-out POST may have been processed")
        #expect(policy.retryDelay(after: post, attempt: 1, method: .get) == nil, "the error's own method wins")
        #expect(policy.retryDelay(after: refusedPost, attempt: 1) == .seconds(1), "never reached the server: safe for any method")
        #expect(RetryPolicy().isTransient(get) && RetryPolicy.neverReachedServer(refusedPost))
        #expect(!RetryPolicy.neverReachedServer(get))
        // A bare URLError (a transport used without a client) says no method.
        #expect(policy.retryDelay(after: URLError(.timedOut), attempt: 1) == nil)
        #expect(policy.retryDelay(after: URLError(.timedOut), attempt: 1, method: .get) == .seconds(1))
        #expect(RetryPolicy().isTransient(URLError(.networkConnectionLost)))
    }

    @Test("the description names the method, the redacted URL and the failure; never a credential")
    func description() throws {
        var request = URLRequest(url: URL(string: "https://bob:hunter2@api.example.test/v1/items?page=3&access_token=abc123")!)
        request.httpMethod = "DELETE"
        request.setValue("Bearer abc123", forHTTPHeaderField: "Authorization")
        request.setValue("sid=s3ss10n", forHTTPHeaderField: "Cookie")
        let message = "The request to https://bob:hunter2@api.example.test/v1/items?access_token=abc123 timed out."
        let error = TransportError(request: request, underlying: URLError(.timedOut, userInfo: [
            NSLocalizedDescriptionKey: message,
            NSURLErrorFailingURLErrorKey: request.url!,
        ]))
        let expected = "DELETE https://***@api.example.test/v1/items?page=3&access_token=REDACTED failed in the transport: "
            + "timed out (URLError -1001): The request to https://***@api.example.test/v1/items?access_token=REDACTED timed out."
        #expect(error.description == expected)
        #expect(error.localizedDescription == expected)
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.description, error.localizedDescription, String(reflecting: error), "\(error)", dumped] {
            for secret in ["hunter2", "abc123", "s3ss10n", "bob"] {
                #expect(!text.contains(secret), "\(secret) in \(text)")
            }
        }
        #expect(dumped.contains("DELETE"))
        let bare = TransportError(request: URLRequest(url: URL(string: "https://h.test/x")!), underlying: URLError(.cannotConnectToHost))
        #expect(bare.description == "GET https://h.test/x failed in the transport: cannot connect to host (URLError -1004)")
    }

    @Test("monitors are told about the TransportError")
    func monitorsSeeTheTransportError() throws {
        final class Monitor: HTTPEventMonitor {
            let errors = Locked<[any Error]>([])
            func receive(_ event: HTTPEvent) {
                if case .requestFailed(let error) = event.kind { errors.withLock { $0.append(error) } }
            }
        }
        let monitor = Monitor()
        let transport = StubTransport()
        transport.stub().thenRespond(.failure(URLError(.timedOut)))
        _ = RequestProbe(API(client: HTTPClient(transport: transport) { $0.monitors = [monitor] }).delete(endpoint: "x"))
        let seen = monitor.errors.withLock { $0 }
        #expect(seen.count == 1)
        #expect((seen.first as? TransportError)?.method == .delete)
    }
}
