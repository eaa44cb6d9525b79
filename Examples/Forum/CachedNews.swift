import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals
import Transit
import TransitCache
import TransitTesting

/// A third origin for the caching step: forum news that may be cached for a minute, and a feed
/// that must be revalidated on every use but may be served stale for ten minutes if the server
/// fails (`no-cache, stale-if-error=600`). It answers a matching `If-None-Match` with 304.
final class NewsServer: Sendable {
    static let news = #"[{"id":1,"title":"The forum moves to Transit"}]"#
    static let feed = #"[{"id":7,"title":"Caching, explained"}]"#

    private let server = LoopbackServer(handler: { request in
        switch request.path {
        case "/news":
            return .json(NewsServer.news, headers: ["Cache-Control": "max-age=60", "ETag": "\"news-1\""])
        case "/feed":
            if request.value(forHTTPHeaderField: "If-None-Match") == "\"feed-1\"" {
                return .status(304, headers: ["ETag": "\"feed-1\"", "Cache-Control": "no-cache, stale-if-error=600"])
            }
            return .json(NewsServer.feed, headers: ["Cache-Control": "no-cache, stale-if-error=600", "ETag": "\"feed-1\""])
        default:
            return .status(404)
        }
    })

    func start() throws { try server.start() }
    func stop() { server.stop() }
    func url(_ path: String) -> URL { server.url(path) }
    /// Requests that reached the server (cache hits never do).
    var requestCount: Int { server.requests.count }
    /// Requests that carried our validator.
    var conditionalRequestCount: Int { server.requests.filter { $0.value(forHTTPHeaderField: "If-None-Match") != nil }.count }
}

/// Step 7 of the example: an HTTP cache in front of the client's transport. Shows a response
/// served from the cache, a revalidation answered 304, and a stale response served while the
/// server is down. Returns after checking each.
func demonstrateCaching(narrator: Narrator, check: (Bool, String) -> Void) async {
    let news = NewsServer()
    do {
        try news.start()
    } catch {
        check(false, "the embedded news server started (\(error))")
        return
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transit-forum-cache-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let cache: HTTPCache
    do {
        cache = try HTTPCache(records: DiskCache(directory: folder))
    } catch {
        check(false, "the HTTP cache opened (\(error))")
        return
    }
    let events = cache.events.sink { event in narrator.say("[cache] \(event)") }
    defer { events.cancel() }
    let client = HTTPClient(transport: URLSessionTransport.shared.caching(in: cache)) { $0.monitors = [narrator] }

    func fetch(_ path: String) async -> HTTPResponse? {
        try? await client.send(URLRequest(url: news.url(path))).firstValue()
    }

    narrator.say("GET /news twice: max-age=60")
    let firstNews = await fetch("/news")
    let secondNews = await fetch("/news")
    check(firstNews?.text == NewsServer.news && secondNews?.text == NewsServer.news && news.requestCount == 1,
          "the second GET /news was served from the cache: the server saw one request")

    narrator.say("GET /feed twice: no-cache, so every use asks the server, which answers 304")
    _ = await fetch("/feed")
    let revalidated = await fetch("/feed")
    check(revalidated?.statusCode == 200 && revalidated?.text == NewsServer.feed && news.conditionalRequestCount == 1,
          "the second GET /feed was revalidated (If-None-Match → 304) and its body came from the cache")

    news.stop()
    narrator.say("[server] the news server is down")
    let stale = await fetch("/feed")
    check(stale?.text == NewsServer.feed, "with the server down, the stale feed was served (stale-if-error=600)")
}
