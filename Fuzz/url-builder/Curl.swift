// libcurl's URL parser (curl_url_*), loaded with dlopen: on Linux URLSession hands every URL to
// libcurl, so libcurl's reading of a built URL is where the request really goes.
#if canImport(Glibc)
import Glibc
#endif

/// The parts of a URL as libcurl reads it.
struct CurlURL: Equatable {
    var scheme: String?
    var user: String?
    var password: String?
    var host: String?
    /// The port the request goes to (the scheme's default when the URL has none).
    var port: String?
    /// The path after libcurl removed dot segments, as it sends it.
    var path: String?
    var query: String?
    var fragment: String?
    /// An IPv6 address's zone (`eth0` in `[fe80::1%25eth0]`), which libcurl keeps apart from the host.
    var zoneID: String? = nil
}

enum Curl {
    private typealias New = @convention(c) () -> OpaquePointer?
    private typealias Cleanup = @convention(c) (OpaquePointer?) -> Void
    private typealias Set = @convention(c) (OpaquePointer?, CInt, UnsafePointer<CChar>?, CUnsignedInt) -> CInt
    private typealias Get = @convention(c) (OpaquePointer?, CInt, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, CUnsignedInt) -> CInt
    private typealias Free = @convention(c) (UnsafeMutableRawPointer?) -> Void

    private struct Functions {
        var new: New
        var cleanup: Cleanup
        var set: Set
        var get: Get
        var free: Free
    }

    // curl/urlapi.h
    private static let partURL: CInt = 0, partScheme: CInt = 1, partUser: CInt = 2, partPassword: CInt = 3, partHost: CInt = 5,
                       partPort: CInt = 6, partPath: CInt = 7, partQuery: CInt = 8, partFragment: CInt = 9,
                       partZoneID: CInt = 10
    private static let defaultPort: CUnsignedInt = 1 << 0

    private static let functions: Functions = {
        guard let library = dlopen("libcurl.so.4", RTLD_NOW) else {
            fatalError("url-builder: cannot load libcurl.so.4 (the library URLSession uses on Linux): \(String(cString: dlerror()))")
        }
        func symbol<T>(_ name: String, as type: T.Type) -> T {
            guard let pointer = dlsym(library, name) else { fatalError("url-builder: libcurl has no \(name)") }
            return unsafeBitCast(pointer, to: type)
        }
        return Functions(new: symbol("curl_url", as: New.self), cleanup: symbol("curl_url_cleanup", as: Cleanup.self),
                         set: symbol("curl_url_set", as: Set.self), get: symbol("curl_url_get", as: Get.self),
                         free: symbol("curl_free", as: Free.self))
    }()

    /// `url` as libcurl reads it with the flags CURLOPT_URL uses for an absolute URL, or the
    /// libcurl error code (CURLUcode) if it refuses it.
    static func parse(_ url: String) -> Result<CurlURL, CurlError> {
        let curl = functions
        guard let handle = curl.new() else { fatalError("url-builder: curl_url() returned NULL") }
        defer { curl.cleanup(handle) }
        let code = curl.set(handle, partURL, url, 0)
        guard code == 0 else { return .failure(CurlError(code: code)) }
        func part(_ which: CInt, _ flags: CUnsignedInt = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl.get(handle, which, &value, flags) == 0, let value else { return nil }
            defer { curl.free(value) }
            return String(cString: value)
        }
        return .success(CurlURL(scheme: part(partScheme), user: part(partUser), password: part(partPassword), host: part(partHost),
                                port: part(partPort, defaultPort), path: part(partPath),
                                query: part(partQuery), fragment: part(partFragment), zoneID: part(partZoneID)))
    }
}

struct CurlError: Error, Equatable {
    var code: CInt
}
