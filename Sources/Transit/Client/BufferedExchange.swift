import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

/// A buffered request's whole way through the client, as one stage: the client's credentials
/// and default fields, the monitors' per-attempt reports, the transport's parts (through the
/// client's policies and redirects, ``HTTPClient/exchange(_:options:events:observer:in:)``, which
/// drives the redirects from inside this stage) buffered into one
/// ``HTTPResponse`` under the size limit and the deadline, and one renewal of the credentials
/// on a 401 that answers them.
///
/// One subscription makes one of these, one cancellation scope and, through the signal that
/// made it, one outlet: the jobs that were a stage each (attaching to the operators' request
/// context, authorising, preparing, collecting) are steps of this one state machine, which the
/// parts drive. Only a renewal, which is rare, subscribes anything more.
///
/// Thread safety: the mutable state is behind a lock that is never held while anything outside
/// runs; the parts of one attempt arrive one at a time, and the deadline, which may fire on its
/// scheduler's thread, claims the end first like every other end.
final class BufferedExchange: @unchecked Sendable {
    /// What every subscription of one buffered request shares: made once, when the request's
    /// signal is made.
    final class Plan: Sendable {
        let client: HTTPClient
        /// The request as each attempt sends it.
        let request: Request
        let options: RequestOptions
        let maxBytes: Int
        let deadline: Duration?

        /// A request is prepared once, when its signal is made, unless the client's authoriser
        /// adds credentials to each attempt (it is then prepared after them, as each attempt
        /// sends it).
        enum Request {
            case prepared(Result<TransportRequest, URLRequestError>)
            /// `precheck`: for a request made of its own fields, what preparing it finds apart
            /// from the credentials, found once.
            case authorized(TransportRequest, by: any Authorizer, precheck: AuthorizedPrecheck?)
        }

        init(client: HTTPClient, request: consuming TransportRequest, options: RequestOptions) {
            self.client = client
            self.options = options
            maxBytes = options.maxResponseBytes ?? client.maxResponseBytes
            deadline = HTTPClient.timed(options.deadline ?? client.deadline)
            if let authorizer = client.authorizer, let url = request.url, authorizer.scope.allows(url) {
                let precheck = client.precheck(authorizing: request)
                self.request = .authorized(request, by: authorizer, precheck: precheck)
            } else {
                // Consumed: when the caller passed its last reference, the default fields are
                // added in place, without a copy.
                do {
                    self.request = .prepared(.success(try client.prepare(request)))
                } catch {
                    self.request = .prepared(.failure(error))
                }
            }
        }

        /// The client's authoriser, when the request goes where it may send credentials.
        var authorizer: (any Authorizer)? {
            if case .authorized(_, let authorizer, _) = request { return authorizer }
            return nil
        }

        /// The request an attempt sends: with the credentials and the default fields it lacks.
        func sent() throws -> TransportRequest {
            switch request {
            case .prepared(let prepared):
                return try prepared.get()
            case .authorized(let request, let authorizer, let precheck):
                let value = try authorizer.authorizationValue()
                guard let precheck, let value else { return try client.prepare(HTTPClient.authorize(request, by: authorizer, value: value)) }
                // Only the credentials are new: they are checked, and the default fields the
                // request lacks follow them, as `prepare` would have added them.
                if let error = precheck.error ?? URLRequest.checkHeader("Authorization", value) { throw error }
                var sent = request
                sent.setValue(value, forHTTPHeaderField: "Authorization", appending: precheck.missing)
                return sent
            }
        }
    }

    /// Where the exchange stands.
    private enum Phase {
        /// The first attempt runs; a 401 that answers the credentials renews them.
        case first
        /// The first attempt's 401 is held while the credentials are renewed.
        case renewing(HTTPResponse)
        /// The attempt after a renewal runs: its answer is the answer.
        case second
        /// The exchange ended: nothing more is delivered.
        case ended
    }

    private struct State {
        var phase = Phase.first
        var buffer: ResponseBuffer
        /// The form of the request the running attempt sent (a response carries it).
        var sent: TransportRequest.Form?
        /// The running attempt's deadline in the client's table.
        var deadline: UInt64?
        /// With monitors: when and how this subscription ends the request.
        var ending = RequestEnding()
    }

    /// For a client with monitors: the request's sink, and which of its subscriptions this is.
    struct Monitored {
        let sink: HTTPEventSink
        let generation: UInt64
    }

    let plan: Plan
    let observer: Observer<HTTPResponse, any Error>
    private let monitored: Monitored?
    /// The scope every attempt and renewal of this subscription is observed in.
    let scope: CancellationToken
    private let lock = Lock()
    @exclusivity(unchecked) private var state: State

    init(_ plan: Plan, _ observer: Observer<HTTPResponse, any Error>, _ context: SubscriptionContext, monitored: Monitored?) {
        self.plan = plan
        self.observer = observer
        self.monitored = monitored
        scope = CancellationToken(context: context)
        state = State(buffer: ResponseBuffer(maxBytes: plan.maxBytes))
    }

    /// The request's sink, with monitors.
    var events: HTTPEventSink? { monitored?.sink }

    /// Starts the first attempt, after attaching the client's clock, and with monitors the
    /// request's sink, to the operators' request context.
    func start() {
        if let chain = scope.context[RequestContext.Key.self] {
            chain.attach(scheduler: plan.client.scheduler, request: events)
        }
        attempt()
    }

    /// The subscription ends (its end delivered, or cancelled): the attempt stops, and its
    /// deadline is dropped.
    func tearDown() {
        let deadline = lock.withLock { () -> UInt64? in
            state.phase = .ended
            defer { state.deadline = nil }
            return state.deadline
        }
        if let deadline { plan.client.deadlines.remove(deadline) }
        scope.cancel()
        guard let monitored else { return }
        if let end = lock.withLock({ state.ending.tearDown() }) { monitored.sink.endSubscription(monitored.generation, end) }
    }

    /// One attempt: the request with the credentials and the default fields it lacks (both
    /// refused before anything is sent), reported to the monitors, sent through the client's
    /// policies, and its parts buffered here; or, for a request the client coalesces, the
    /// flight's response.
    private func attempt() {
        let client = plan.client
        let sent: TransportRequest
        do {
            sent = try plan.sent()
        } catch {
            return end(.failed(error), reporting: false)
        }
        let form = sent.form
        lock.withLock { state.sent = form }
        let events = self.events
        events?.startRequest(form)
        if client.coalescesRequests, sent.bodyFile == nil, sent.bodyProgress == nil, let key = Coalescer.key(for: sent) {
            // The flight buffers the response once for all who share it, under its own deadline.
            let flight = client.parts(of: sent, options: plan.options, events: events).collectResponse(
                for: sent, maxBytes: plan.maxBytes, events: events, deadline: plan.deadline, deadlines: client.deadlines
            )
            return client.coalescer.send(key + "\n\(plan.maxBytes)", flight, request: sent, events: events)
                .observe(Observer { [self] event in answer(event) }, in: scope)
        }
        if let duration = plan.deadline {
            let deadline = client.deadlines.arm(duration, for: sent, events: events, cancelling: scope, failing: Observer { [self] event in answer(event) })
            lock.withLock { state.deadline = deadline }
        }
        client.exchange(sent, options: plan.options, events: events, observer: Observer { [self] event in receive(event) }, in: scope)
    }

    /// A part of the running attempt.
    private func receive(_ part: Event<HTTPResponsePart, any Error>) {
        switch part {
        case .value(.head(let head)):
            if let tooLarge = lock.withLock({ state.buffer.receive(head) }) { refuse(tooLarge) }
        case .value(.body(let chunk)):
            if let tooLarge = lock.withLock({ state.buffer.receive(chunk) }) { refuse(tooLarge) }
        case .finished:
            let (collected, sent, deadline) = lock.withLock { () -> (Result<(HTTPResponseHead, Data), URLError>, TransportRequest.Form?, UInt64?) in
                defer { state.deadline = nil }
                return (state.buffer.take(), state.sent, state.deadline)
            }
            if let deadline { plan.client.deadlines.remove(deadline) }
            switch collected {
            case .success(let (head, body)):
                guard let sent else { return }
                answer(.value(HTTPResponse(data: body, head: head, sent: TransportRequest(form: sent))))
                answer(.finished)
            case .failure(let error):
                answer(.failed(error))
            }
        case .failed(let error):
            // A transport's failures already carry the request (the redirecting exchange annotates them).
            answer(.failed(error))
        }
    }

    /// A body over the limit: the transfer stops at once.
    private func refuse(_ tooLarge: ResponseTooLargeError) {
        scope.cancel()
        answer(.failed(tooLarge))
    }

    /// The attempt's answer: reported to the monitors, then delivered, unless it is a 401 of the
    /// first attempt that answers the credentials, which renews them instead.
    private func answer(_ event: Event<HTTPResponse, any Error>) {
        switch event {
        case .value(let response):
            // One decision: dropped after the end, held when it renews, else reported and delivered.
            let delivers = lock.withLock { () -> Bool? in
                if case .ended = state.phase { return nil }
                guard case .first = state.phase, let authorizer = plan.authorizer, response.statusCode == 401,
                      response.answersCredentials(sentIn: authorizer.scope)
                else { return true }
                state.phase = .renewing(response)
                return false
            }
            guard let delivers else { return }
            if let events {
                events.noteStatus(response.statusCode)
                events.emit(.responseReceived(response), form: response.sent.form)
            }
            if delivers { deliver(.value(response)) }
        case .finished:
            let rejected = lock.withLock { () -> HTTPResponse? in
                guard case .renewing(let rejected) = state.phase else { return nil }
                return rejected
            }
            if let rejected { return renew(after: rejected) }
            end(.finished, reporting: false)
        case .failed:
            end(event, reporting: true)
        }
    }

    /// Ends the exchange with `event` (a completion), once; a failure of an attempt is reported
    /// to the monitors first.
    private func end(_ event: Event<HTTPResponse, any Error>, reporting: Bool) {
        let first = lock.withLock { () -> Bool in
            if case .ended = state.phase { return false }
            state.phase = .ended
            return true
        }
        guard first else { return }
        if reporting, case .failed(let error) = event, let events {
            events.emit(.requestFailed(error), form: lock.withLock { state.sent })
        }
        deliver(event)
    }

    /// Passes `event` on. With monitors, the request ends with it, as ``RequestEnding`` decides:
    /// the response or the completion completes it, a failure fails it.
    private func deliver(_ event: Event<HTTPResponse, any Error>) {
        guard let monitored else { return observer.send(event) }
        let ended: HTTPEvent.RequestOutcome
        switch event {
        case .value, .finished: ended = .completed(statusCode: nil)
        case .failed(let error): ended = .failed(error)
        }
        lock.withLock { state.ending.willDeliver(ending: ended) }
        observer.send(event)
        if let end = lock.withLock({ state.ending.didDeliver(ending: ended) }) { monitored.sink.endSubscription(monitored.generation, end) }
    }

    /// Renews the credentials `rejected` was refused with, then sends the request once more; a
    /// renewal that ends without renewing delivers the 401 as the answer.
    private func renew(after rejected: HTTPResponse) {
        guard let authorizer = plan.authorizer else { return }
        let client = plan.client
        let renewal = authorizer.renewal(
            in: CredentialRenewalContext(scheduler: client.scheduler, events: events, subscription: scope.context)
        )
        let waiting = scope.makeChild()
        renewal(rejected.request).observe(Observer { [self] event in
            switch event {
            case .value:
                // Stop waiting (releases this waiter), then send the request again, once.
                waiting.cancel()
                if leavesRenewal() { attempt() }
            case .failed(let error):
                end(.failed(error), reporting: false)
            case .finished:
                // A renewal that ends without renewing: the 401 is the answer.
                guard leavesRenewal() else { return }
                deliver(.value(rejected))
                end(.finished, reporting: false)
            }
        }, in: waiting)
    }

    /// Whether the renewal's outcome still counts (nothing ended the exchange meanwhile): the
    /// exchange then goes on to its second attempt, or to the 401 as the answer.
    private func leavesRenewal() -> Bool {
        lock.withLock {
            guard case .renewing = state.phase else { return false }
            state.phase = .second
            return true
        }
    }
}

extension HTTPClient {
    /// `request` sent and buffered, as one stage (``BufferedExchange``); with monitors, reported
    /// as one request that ends once per subscription (completed, failed or cancelled), in the same
    /// stage.
    func buffered(_ request: consuming TransportRequest, options: RequestOptions) -> Signal<HTTPResponse, any Error> {
        let plan = BufferedExchange.Plan(client: self, request: request, options: options)
        guard let monitors = events else {
            return Signal(subscribing: { observer, context in
                let exchange = BufferedExchange(plan, observer, context, monitored: nil)
                exchange.start()
                return { exchange.tearDown() }
            })
        }
        let operationName = options.operationName
        return Signal(subscribing: { observer, context in
            // The request's sink: made here, or continued from the chain operator that subscribes
            // again (see ``RequestContext``).
            let sink = monitors.subscribedRequest(operationName: operationName, in: context[RequestContext.Key.self])
            let monitored = BufferedExchange.Monitored(sink: sink, generation: sink.beginSubscription())
            let exchange = BufferedExchange(plan, observer, context, monitored: monitored)
            exchange.start()
            return { exchange.tearDown() }
        })
    }
}
