import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Synchronization
import Transit

/// A transport that delivers what `URLSessionTransport` delivers, counts the body bytes of every
/// exchange, and fails the first exchange with `URLError(.networkConnectionLost)` once `cutAfter`
/// body bytes have passed: a connection lost at that point of the transfer.
final class CuttingTransport: HTTPTransport, Sendable {
    private let base = URLSessionTransport()
    private let cutAfter: Int
    /// Body bytes delivered, per exchange, and the `Range` header each exchange sent.
    let exchanges = Mutex<[(range: String?, bytes: Int)]>([])

    init(cutAfter: Int) {
        self.cutAfter = cutAfter
    }

    func exchange(_ request: TransportRequest) -> Signal<HTTPResponsePart, any Error> {
        Signal { [self] observer in
            let index = exchanges.withLock { exchanges in
                exchanges.append((request.urlRequest.value(forHTTPHeaderField: "Range"), 0))
                return exchanges.count - 1
            }
            let cuts = index == 0
            let scope = CancellationToken()
            base.exchange(request).observe(Observer { [self] event in
                guard case .value(.body(let chunk)) = event else {
                    observer.send(event)
                    return
                }
                let before = exchanges.withLock { $0[index].bytes }
                if cuts, before + chunk.count >= cutAfter {
                    let kept = cutAfter - before
                    exchanges.withLock { $0[index].bytes += kept }
                    if kept > 0 { observer.send(.body(chunk.prefix(kept))) }
                    scope.cancel()
                    observer.fail(URLError(.networkConnectionLost))
                    return
                }
                exchanges.withLock { $0[index].bytes += chunk.count }
                observer.send(event)
            }, in: scope)
            return { scope.cancel() }
        }
    }
}

/// Downloads the 1 GiB file with its connection lost at the half, then resumed by `retry`, and
/// prints what each exchange fetched.
func resumedDownload(base: String, folder: String) {
    let size = 1 << 30
    let transport = CuttingTransport(cutAfter: size / 2)
    let client = HTTPClient(transport: transport)
    let destination = URL(fileURLWithPath: folder).appendingPathComponent("resumed-\(getpid())")
    defer { try? FileManager.default.removeItem(at: destination) }
    let finished = DispatchSemaphore(value: 0)
    let outcome = Mutex<(Int64, String?)>((-1, nil))
    let firstProgressAfterCut = Mutex<Int64?>(nil)
    let failures = Mutex(0)
    let started = ContinuousClock.now
    let token = client.download(URLRequest(url: URL(string: base + "/big")!), to: destination)
        .handleEvents(receiveCompletion: { completion in
            if case .failure = completion { failures.withLock { $0 += 1 } }
        })
        .retry(1)
        .sink(receiveCompletion: { completion in
            if case .failure(let error) = completion { outcome.withLock { $0.1 = "\(error)" } }
            finished.signal()
        }, receiveValue: { event in
            switch event {
            case .progress(let progress):
                if failures.withLock({ $0 }) == 1 { firstProgressAfterCut.withLock { $0 = $0 ?? progress.bytesReceived } }
            case .completed(let file):
                outcome.withLock { $0.0 = file.byteCount }
            }
        })
    finished.wait()
    let elapsed = ContinuousClock.now - started
    token.cancel()
    let (byteCount, error) = outcome.withLock { $0 }
    if let error { fail("resumed download failed: \(error)") }
    let exchanges = transport.exchanges.withLock { $0 }
    let total = exchanges.reduce(0) { $0 + $1.bytes }
    print("### Resumed download: 1 GiB from nginx, connection lost at the half, `retry(1)`\n")
    print("| exchange | Range sent | body bytes fetched |")
    print("|---|---|---:|")
    for (index, exchange) in exchanges.enumerated() {
        print("| \(index + 1) | \(exchange.range ?? "none") | \(exchange.bytes) |")
    }
    print("| total | | \(total) |")
    print("\nFile on disk: \(byteCount) bytes (\(byteCount == Int64(size) ? "the whole file" : "NOT the whole file")); fetched in total: \(fmt(Double(total) / Double(size), 3))× the file (a restart from zero fetches 1.5×); progress after the cut resumed at \(firstProgressAfterCut.withLock { $0 }.map(String.init) ?? "?") bytes; \(elapsed) in all.")
}
