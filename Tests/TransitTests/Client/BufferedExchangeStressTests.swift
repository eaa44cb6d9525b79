import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Testing
@testable import Transit

/// The buffered exchange's ends racing on real threads: the transport's answer, the client's
/// deadline, a 401's renewal and the subscriber's cancellation, each from its own thread. Run
/// under the thread sanitizer by CI.
@Suite("The buffered exchange under real threads")
struct BufferedExchangeStressTests {
    /// Answers every request on a concurrent queue, a few microseconds later: head, body, end.
    /// Every second request is answered 401 (a renewal then sends it again).
    private struct RacingTransport: HTTPTransport {
        let queue: DispatchQueue
        let served = AuthRetryBox(0)

        func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
            let queue = queue
            let served = served
            return Signal { observer in
                guard let url = request.url else {
                    observer.fail(URLError(.badURL))
                    return nil
                }
                var number = 0
                served.mutate {
                    $0 += 1
                    number = $0
                }
                let status = number % 2 == 0 ? 401 : 200
                queue.asyncAfter(deadline: .now() + .microseconds(number % 300)) {
                    observer.send(.head(HTTPResponseHead(url: url, statusCode: status, fields: [HTTPField(name: "Content-Length", value: "5")])))
                    observer.send(.body(Data("hello".utf8)))
                    observer.finish()
                }
                return nil
            }
        }
    }

    /// Credentials in one `Authorization` value, renewed on another thread.
    private struct RacingAuthorizer: Authorizer {
        let queue: DispatchQueue
        var scope: CredentialScope { CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly) }

        func authorize(_ request: URLRequest) throws -> URLRequest { request }
        func authorizationValue() throws -> String? { "Key abc" }

        func renewCredentials(after rejected: URLRequest, scheduler: any Scheduler) -> Signal<Void, any Error> {
            Signal(value: ()).subscribe(on: queue)
        }
    }

    @Test("the answer, the deadline, a renewal and cancellation race: one end at most, nothing after it, exactly one when not cancelled")
    func endsRaceOnRealThreads() async {
        let queue = DispatchQueue(label: "buffered-exchange-stress", attributes: .concurrent)
        let transport = RacingTransport(queue: queue)
        for round in 0..<300 {
            let client = HTTPClient(transport: transport) {
                $0.scheduler = queue
                $0.authorizer = RacingAuthorizer(queue: queue)
                $0.deadline = .after(.microseconds(50 + round % 400))
            }
            let log = AuthRetryLog<HTTPResponse>()
            let request = TransportRequest(method: .get, url: URL(string: "http://127.0.0.1:1/racing")!)
            let cancels = round % 3 == 0
            let ended = AuthRetryBox<CheckedContinuation<Void, Never>?>(nil)
            let logged = log.observer
            // The end is logged before the test is woken to look at the log.
            let observer = Observer<HTTPResponse, any Error> { event in
                logged.send(event)
                guard event.isTerminal else { return }
                var waiting: CheckedContinuation<Void, Never>?
                ended.mutate { swap(&waiting, &$0) }
                waiting?.resume()
            }
            let signal = client.send(request)
            if cancels {
                let token = signal.observe(observer)
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    queue.asyncAfter(deadline: .now() + .microseconds(round % 200)) {
                        token.cancel()
                        continuation.resume()
                    }
                }
                #expect(log.terminalCount <= 1)
            } else {
                var token: CancellationToken?
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    ended.mutate { $0 = continuation }
                    token = signal.observe(observer)
                }
                withExtendedLifetime(token) {}
                #expect(log.terminalCount == 1)
                // The end is the response (200, or the renewed request's answer) or the deadline.
                if let failure = log.failure {
                    #expect((failure as? TransportError)?.code == .timedOut, "\(failure)")
                } else {
                    #expect(log.values.count == 1)
                }
            }
            #expect(log.violations == 0)
        }
    }
}
