import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Transit

/// What the HTTP cache stores with a response body (as the record's metadata): the status, the
/// headers, the credential partition and the request header values the response varies on, and
/// when it was requested and received. Also the freshness arithmetic of RFC 9111 §4.2 over those.
///
/// Stored as JSON. `partition` is required: metadata written before the cache was partitioned
/// by credential does not decode, and its record is never served (the next response for the
/// URL replaces it).
struct StoredResponse: Codable, Equatable, Sendable {
    var url: String
    /// The partition of the request the response answered (see ``HTTPCache/partition(of:)``):
    /// empty for a request without credentials, else a keyed digest of them.
    var partition: String
    var status: Int
    var headers: [String: String]
    /// The lowercased header names of the response's `Vary`, or empty.
    var varyNames: [String]
    /// The request's values of those headers when the response was stored (`nil`: absent). A
    /// credential header's value is not kept (an empty string stands for it): the partition
    /// already holds every request served from the record to the same value.
    var varyValues: [String?]
    /// Milliseconds since 1970: when the request was sent, and when the response head arrived.
    var requestTime: Int64
    var responseTime: Int64

    /// Statuses a cache may store and reuse without explicit freshness (RFC 9110 §15.1), less
    /// 206 (this cache does not combine partial content).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Headers that describe one connection or one transfer, not the response (RFC 9111 §3.1),
    /// and those a 304 must not update (§3.2): never stored, never merged. A cookie the server
    /// sets (``cookieHeaders``) is a credential handed over once: delivered with the response
    /// that carried it, never written to the cache's files nor served again from them.
    static let unstoredHeaders: Set<String> = cookieHeaders.union([
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info",
    ])
    /// The headers that set cookies (RFC 6265, and RFC 2965's obsolete one).
    static let cookieHeaders: Set<String> = ["set-cookie", "set-cookie2"]
    static let unmergedHeaders: Set<String> = unstoredHeaders.union(["content-length", "content-encoding", "content-range"])

    init(url: URL, response: HTTPResponseHead, request: URLRequest, requestTime: Int64, responseTime: Int64, partition: String = "", sensitiveHeaders: Set<String> = []) {
        self.url = url.absoluteString
        self.partition = partition
        status = response.statusCode
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            let name = "\(name)"
            guard !StoredResponse.unstoredHeaders.contains(name.lowercased()) else { continue }
            headers[name] = "\(value)"
        }
        self.headers = headers
        varyNames = StoredResponse.varyNames(headers.first { $0.key.lowercased() == "vary" }?.value)
        varyValues = StoredResponse.values(of: varyNames, in: request, sensitiveHeaders: sensitiveHeaders)
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// The value of header `name`, matched case-insensitively.
    func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }

    var cacheControl: CacheControl { CacheControl(header("Cache-Control")) }

    /// `true` if a conditional request can revalidate the response.
    var hasValidators: Bool { header("ETag") != nil || header("Last-Modified") != nil }

    /// `true` if `request` sends the same values of the `Vary` headers as the stored request
    /// (credential headers, `sensitiveHeaders` among them, only as present or absent: the
    /// partition compares their values). A response that varies on `*` matches no request
    /// (RFC 9111 §4.1).
    func matches(_ request: URLRequest, sensitiveHeaders: Set<String> = []) -> Bool {
        !varyNames.contains("*") && StoredResponse.values(of: varyNames, in: request, sensitiveHeaders: sensitiveHeaders) == varyValues
    }

    /// The lowercased names in a `Vary` value ("*" stays "*").
    static func varyNames(_ value: String?) -> [String] {
        guard let value else { return [] }
        return listElements(value).map { $0.lowercased() }.filter { !$0.isEmpty }.sorted()
    }

    /// The values of the headers `names` in `request`, with whitespace around commas removed; a
    /// credential's value (a header `Redaction.isSecretHeader(_:additional:)` accepts with
    /// `sensitiveHeaders`) as an empty string (present) or `nil` (absent), so that no credential
    /// is written to disk.
    static func values(of names: [String], in request: URLRequest, sensitiveHeaders: Set<String>) -> [String?] {
        names.map { name in
            guard let value = request.value(forHTTPHeaderField: name) else { return nil }
            // Secret as the request spells the name too (`XAuthToken` reads as `x_auth_token`).
            let spelled = request.allHTTPHeaderFields?.keys.first { $0.lowercased() == name } ?? name
            if Redaction.isSecretHeader(name, additional: sensitiveHeaders) || Redaction.isSecretHeader(spelled, additional: sensitiveHeaders) {
                return ""
            }
            return listElements(value).joined(separator: ",")
        }
    }

    /// The elements of a comma-separated field value, without the spaces and tabs around them.
    /// Split on Unicode scalars, as HTTP reads bytes: as Characters, a comma or a space followed
    /// by a combining mark is one Character that is neither, and the whitespace would stay.
    static func listElements(_ value: String) -> [String] {
        value.unicodeScalars.split(separator: ",", omittingEmptySubsequences: false).map { element in
            var scalars = element
            while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
            while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
            return String(Substring(scalars))
        }
    }

    private func date(_ name: String) -> Date? {
        header(name).flatMap { RetryAfter.httpDate($0, now: Date(cacheMilliseconds: responseTime)) }
    }

    /// The freshness lifetime in seconds (RFC 9111 §4.2.1): `max-age`, else `Expires` − `Date`
    /// (an invalid `Expires` means already expired), else — only for a status that allows it,
    /// or a `public` response — the heuristic: `fraction` of the time since `Last-Modified`,
    /// at most `maximumHeuristic`. Otherwise zero.
    func freshnessLifetime(fraction: Double, maximumHeuristic: Double) -> Double {
        let control = cacheControl
        if let maxAge = control.maxAge { return Double(maxAge) }
        let dateValue = date("Date") ?? Date(cacheMilliseconds: responseTime)
        if let expires = header("Expires") {
            guard let expiry = RetryAfter.httpDate(expires, now: dateValue) else { return 0 }
            return max(0, expiry.timeIntervalSince(dateValue))
        }
        if StoredResponse.heuristicallyCacheable.contains(status) || control.isPublic, let lastModified = date("Last-Modified") {
            return min(max(0, dateValue.timeIntervalSince(lastModified)) * fraction, maximumHeuristic)
        }
        return 0
    }

    /// The `Age` field's value in seconds: 0 without one (or with one that is not a number). A
    /// field sent more than once arrives joined (`5, 100`); the largest value is taken, so the
    /// response is never taken for younger than one of them says (a stale response served as
    /// fresh), only perhaps for older (one revalidation too many).
    var ageSeconds: Int {
        guard let value = header("Age") else { return 0 }
        // Split at the comma byte: a comma followed by a combining mark is one Character.
        return value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .compactMap { CacheControl.deltaSeconds(String(decoding: $0, as: UTF8.self).trimmingWhitespace) }
            .max() ?? 0
    }

    /// The response's current age in seconds at `now` (milliseconds), per RFC 9111 §4.2.3.
    ///
    /// The times are subtracted as `Double`s: they are read back from a file, which may say
    /// anything its checksums allow, and `Int64` subtraction traps on overflow (a record
    /// claiming a request at `Int64.min` crashed the next request for its URL). Any times give a
    /// finite age that is not negative; absurd ones an absurd age, so the response is stale.
    func currentAge(now: Int64) -> Double {
        let responseSeconds = Double(responseTime) / 1000
        let dateValue = date("Date")?.timeIntervalSince1970 ?? responseSeconds
        let apparentAge = max(0, responseSeconds - dateValue)
        let ageValue = Double(ageSeconds)
        let responseDelay = max(0, (Double(responseTime) - Double(requestTime)) / 1000)
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        let residentTime = max(0, (Double(now) - Double(responseTime)) / 1000)
        return correctedInitialAge + residentTime
    }

    /// The stored response with the headers of a `304 Not Modified` merged in (RFC 9111 §3.2)
    /// and the times of the revalidation. A `Vary` in the 304 replaces the stored one, and the
    /// response then varies on it, with the values `request` (the request it revalidated) sent.
    ///
    /// The 304 freshens the response, so its age is now the 304's (RFC 9111 §4.3.4, §4.2.3): a
    /// `Date` or an `Age` the 304 does not send is not kept from the original response. A missing
    /// `Date` becomes the time the 304 arrived (RFC 9110 §6.6.1: a recipient adds one) and a
    /// missing `Age` goes. Kept, they made a response revalidated by a server that sends 304s
    /// without `Date` as old as the first answer, stale at once, revalidated on every request.
    func updated(
        with notModified: HTTPResponseHead, request: URLRequest, requestTime: Int64, responseTime: Int64, sensitiveHeaders: Set<String> = []
    ) -> StoredResponse {
        var copy = self
        var varyUpdated = false
        for (name, value) in notModified.allHeaderFields {
            let name = "\(name)"
            let lowered = name.lowercased()
            guard !StoredResponse.unmergedHeaders.contains(lowered) else { continue }
            copy.headers = copy.headers.filter { $0.key.lowercased() != lowered }
            copy.headers[name] = "\(value)"
            if lowered == "vary" { varyUpdated = true }
        }
        if varyUpdated {
            copy.varyNames = StoredResponse.varyNames(copy.header("Vary"))
            copy.varyValues = StoredResponse.values(of: copy.varyNames, in: request, sensitiveHeaders: sensitiveHeaders)
        }
        if notModified.value(forHTTPHeaderField: "Date") == nil {
            copy.headers = copy.headers.filter { $0.key.lowercased() != "date" }
            copy.headers["Date"] = StoredResponse.httpDate(milliseconds: responseTime)
        }
        if notModified.value(forHTTPHeaderField: "Age") == nil {
            copy.headers = copy.headers.filter { $0.key.lowercased() != "age" }
        }
        copy.requestTime = requestTime
        copy.responseTime = responseTime
        return copy
    }

    /// `milliseconds` since 1970 as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110
    /// §5.6.7), the seconds rounded down (never negated: `-Int64.min` traps, and a clock clamps
    /// to it).
    static func httpDate(milliseconds: Int64) -> String {
        RetryAfter.imfFixdate(secondsSince1970: milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0))
    }

    /// This response as delivered for a revalidation answered by `notModified`: with the cookies
    /// the 304 set (they came from the network on this exchange; they are not stored).
    func delivered(afterRevalidationBy notModified: HTTPResponseHead) -> StoredResponse {
        var copy = self
        for field in notModified.fields where StoredResponse.cookieHeaders.contains(field.name.lowercased()) {
            copy.headers[field.name] = notModified.value(forHTTPHeaderField: field.name)
        }
        return copy
    }

    /// The response to hand out for `url`, with an `Age` header (RFC 9111 §5.1).
    func response(for url: URL, age: Double) -> HTTPResponseHead? {
        var fields = headers.filter { $0.key.lowercased() != "age" }
        fields["Age"] = String(Int(min(max(0, age), Double(CacheControl.maximumDeltaSeconds))))
        return HTTPResponseHead(url: url, statusCode: status, headerFields: fields)
    }
}
