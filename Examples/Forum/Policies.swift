import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit

/// The outcome of one subscription to `signal`.
private func outcome<T: Sendable>(_ signal: Signal<T, any Error>) async -> Result<T, any Error> {
    do {
        return .success(try await signal.firstValue())
    } catch {
        return .failure(error)
    }
}

/// The outcomes of the signals `make(1)` … `make(count)`, subscribed all at once.
private func outcomes<T: Sendable>(
    _ count: Int,
    of make: @escaping @Sendable (Int) -> Signal<T, any Error>
) async -> [Result<T, any Error>] {
    await withTaskGroup(of: Result<T, any Error>.self) { group in
        for index in 1...count { group.addTask { await outcome(make(index)) } }
        var results: [Result<T, any Error>] = []
        for await result in group { results.append(result) }
        return results
    }
}

/// Step 8 of the example: a second service declares its policies once, on its client
/// (``ForumV2Service/makeClient(origins:tokens:monitors:)``), and the narrator — the client's
/// monitor — tells each one at work: rate-limited requests spaced out, a cooldown shared by
/// concurrent requests after one 429, a retry refused by the budget during a 5xx storm, failover
/// to a mirror and back, a re-entrant refresh failing cleanly, coalesced requests, a multipart
/// upload and a cURL line with the token redacted.
func demonstratePolicies(forum: ForumServer, auth: AuthService, narrator: Narrator, check: (Bool, String) -> Void) async {
    let mirror = ForumServer(mirroring: forum)
    do {
        try mirror.start()
    } catch {
        check(false, "the mirror of the v2 API started (\(error))")
        return
    }
    defer { mirror.stop() }
    narrator.say("[server] a mirror of the v2 API on \(mirror.baseURL), sharing the primary's accounts")

    let signIn = { () async -> AuthToken? in try? await auth.logIn(username: "ada", password: "lovelace").firstValue() }
    guard let token = await signIn() else {
        check(false, "signed in for the v2 API")
        return
    }
    // The store renews through the v2 client itself, as an app whose token endpoint lives on the
    // same API would: its refresh is a request in the store's own scope (see 8e).
    let clientBox = Guarded<HTTPClient?>(nil)
    let tokens = TokenStore(token: token, scope: CredentialScope(hosts: ["127.0.0.1"], insecureHTTP: .loopbackOnly)) { current in
        AuthService(baseURL: forum.baseURL, client: clientBox.withLock { $0! }).refresh(current)
    }
    let client = ForumV2Service.makeClient(origins: [forum.baseURL, mirror.baseURL], tokens: tokens, monitors: [narrator])
    clientBox.withLock { $0 = client }
    defer { clientBox.withLock { $0 = nil } }  // client → store → refresh → box → client
    let service = ForumV2Service(baseURL: forum.baseURL, client: client, retry: ForumV2Service.retryPolicy)

    narrator.heading("8a. Rate limit: 12 pages requested at once, at most 20 requests a second (8 at once after a quiet spell)")
    let waitsBefore = narrator.count("rateLimitWaited")
    let burstStarted = Date()
    let burst = await outcomes(12, of: service.tags(page:))
    let spread = Date().timeIntervalSince(burstStarted)
    let waits = narrator.count("rateLimitWaited") - waitsBefore
    check(burst.allSatisfy { (try? $0.get()) != nil } && waits >= 3 && spread >= 0.15,
          String(format: "all 12 succeeded; %d were held back and sent in turn over %.2f s, none refused", waits, spread))

    narrator.heading("8b. One 429 (Retry-After: 1) and the whole client waits: a cooldown shared by concurrent requests")
    forum.rateLimitTags(forSeconds: 1)
    let cooldownsBefore = narrator.count("cooldownStarted")
    let cooldownWaitsBefore = narrator.count("cooldownWait")
    let tooManyBefore = forum.tooManyRequestsAnswered
    let first = Task { await outcome(service.tags(page: 1)) }
    let started = await narrator.waitFor("cooldownStarted", count: cooldownsBefore + 1)
    let concurrent = await outcomes(3) { service.tags(page: $0 + 1) }
    let firstResult = await first.value
    check(started && narrator.count("cooldownWait") - cooldownWaitsBefore >= 3,
          "the three requests sent after the 429 waited for the cooldown instead of going out")
    check(forum.tooManyRequestsAnswered - tooManyBefore == 1 && (concurrent + [firstResult]).allSatisfy { (try? $0.get()) != nil },
          "the server answered one 429 in all, and all four requests succeeded once it had passed")

    narrator.heading("8c. A 5xx storm: every retry would add load, so the retry budget refuses most of them")
    forum.startStorm()
    let scheduledBefore = narrator.count("retryScheduled")
    let refusedBefore = narrator.count("retryRefusedByBudget")
    let storm = await outcomes(6, of: service.status(board:))
    forum.endStorm()
    let scheduled = narrator.count("retryScheduled") - scheduledBefore
    let refused = narrator.count("retryRefusedByBudget") - refusedBefore
    let exhausted = storm.filter { if case .failure(let error) = $0 { error is RetryBudgetExhausted } else { false } }.count
    check(refused >= 1 && exhausted >= 1 && storm.allSatisfy { (try? $0.get()) == nil },
          "\(scheduled) retr\(scheduled == 1 ? "y" : "ies") went out, \(refused) were refused by the budget (RetryBudgetExhausted)")
    check(forum.stormHits < 18, "the struggling server met \(forum.stormHits) requests, not the 18 that 3 attempts each would send")

    narrator.heading("8d. The primary host goes down: failover to the mirror, and back once it recovers")
    forum.startOutage()
    narrator.say("[server] the primary drops every v2 connection without answering")
    let failoversBefore = narrator.count("failover")
    let duringOutage = await outcome(service.tags())
    check((try? duringOutage.get())?.servedBy == "mirror" && narrator.count("failover") == failoversBefore + 1,
          "the request moved to the mirror, which answered")
    forum.endOutage()
    narrator.say("[server] the primary is back; the client avoids it until its 0.5 s quarantine is over")
    try? await Task.sleep(for: .milliseconds(600))
    let recoveriesBefore = narrator.count("hostRecovered")
    let afterOutage = await outcome(service.tags())
    check((try? afterOutage.get())?.servedBy == "primary" && narrator.count("hostRecovered") == recoveriesBefore + 1,
          "after the quarantine the primary answered again")

    narrator.heading("8e. Sessions revoked: the refresh itself gets 401, and fails at once instead of waiting for itself")
    forum.expireAccessTokens()
    forum.revokeRefreshTokens()
    narrator.say("[server] every access token expired and every refresh token revoked")
    let refusalsBefore = narrator.count("credentialRenewalRefused")
    let revokedAt = Date()
    let revoked = await outcome(service.tags())
    let failedAfter = Date().timeIntervalSince(revokedAt)
    if case .failure(let error) = revoked {
        narrator.say("the request failed: \(error)")
    }
    check(revoked.failure as? TokenStore.RefreshError == .reentrantRefresh && failedAfter < 2 && !tokens.isRefreshing
            && narrator.count("credentialRenewalRefused") == refusalsBefore + 1,
          String(format: "failed with .reentrantRefresh after %.2f s; the store is not stuck refreshing", failedAfter))
    guard let fresh = await signIn() else {
        check(false, "signed in again")
        return
    }
    tokens.current = fresh
    narrator.say("signed in again")

    narrator.heading("8f. Three identical GETs at once share one request")
    let popularBefore = forum.hits("/v2/popular")
    let joinsBefore = narrator.count("coalescedRequestJoined")
    let popular = await outcomes(3) { _ in service.popular }
    check(popular.allSatisfy { (try? $0.get())?.tags == Array(ForumServer.tags.prefix(2)) }
            && forum.hits("/v2/popular") - popularBefore == 1 && narrator.count("coalescedRequestJoined") - joinsBefore == 2,
          "all three got the answer; the server saw one request")

    narrator.heading("8g. A multipart upload: a field and a file streamed from disk, with a progress bar")
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-forum-upload-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let photo = folder.appendingPathComponent("meetup.jpg")
    try? Data(repeating: 0xA5, count: 48 << 10).write(to: photo)
    var form = MultipartFormData()
    form.append("Forum meetup", name: "title")
    form.append(fileAt: photo, name: "photo", contentType: "image/jpeg")
    let bar = ProgressBar()
    let sent = Guarded<[UploadProgress]>([])
    let uploaded = await outcome(service.upload(form) { progress in
        sent.withLock { $0.append(progress) }
        bar.update(sent: progress)
    })
    let trafficAfterUpload = narrator.traffic
    let reports = sent.withLock { $0 }
    check(reports.first?.bytesSent == 0 && reports.last?.bytesSent == reports.last?.expectedBytes
            && zip(reports, reports.dropFirst()).allSatisfy { $0.bytesSent < $1.bytesSent },
          "the bar went from 0 to the whole body (\(reports.last?.expectedBytes ?? 0) bytes), never back")
    check((try? uploaded.get()) == [
        ReceivedPart(name: "title", filename: nil, bytes: 12),
        ReceivedPart(name: "photo", filename: "meetup.jpg", bytes: 48 << 10),
    ], "the server received both parts whole: the 12-byte title and the 48 KiB photo")

    narrator.heading("8h. The upload as a cURL command line, for a bug report: the token is redacted")
    if let sent = narrator.lastAttempt {
        let curl = sent.curlDescription()
        print("        \(curl)")
        check(curl.contains("Authorization: Bearer REDACTED") && !curl.contains(tokens.current.accessToken),
              "the Authorization header shows Bearer REDACTED, never the token")
    } else {
        check(false, "a request to render")
    }
    narrator.say(String(
        format: "v2 client: %d exchanges with the transport, %lld bytes sent and %lld received, headers included",
        trafficAfterUpload.exchanges, trafficAfterUpload.sent, trafficAfterUpload.received
    ))
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
