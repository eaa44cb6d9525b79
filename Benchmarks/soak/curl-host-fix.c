// A corrected CFURLSessionCurlHostIsEqual, for LD_PRELOAD: shows how much of a Linux soak's growth
// is swift-corelibs-foundation's leak there and nothing else. Not part of any product.
//
//     cc -shared -fPIC -O2 -o /tmp/libsoak-curl-host-fix.so Benchmarks/soak/curl-host-fix.c /usr/lib/x86_64-linux-gnu/libcurl.so.4
//     LD_PRELOAD=/tmp/libsoak-curl-host-fix.so Benchmarks/.build/release/soak-bench ...
//
// Foundation's version (Sources/_CFURLSessionInterface/CFURLSessionInterface.c, called by
// `_EasyHandle.set(url:)` for every transfer) parses the URL into a `CURLU` handle and releases
// the handle with `curl_free(h)`, which frees the handle's struct but not the parts
// `curl_url_set` allocated in it (scheme, host, port, path: four allocations, about 144 bytes of
// heap a request with glibc). `curl_url_cleanup(h)` frees them. libFoundationNetworking calls the
// function through its PLT, so a preloaded definition replaces it.
#include <stdbool.h>
#include <string.h>

// From curl/curl.h and curl/urlapi.h (libcurl >= 7.62), declared here so no headers are needed.
typedef struct Curl_URL CURLU;
enum { SOAK_CURLUPART_URL = 0, SOAK_CURLUPART_HOST = 5 };
extern CURLU *curl_url(void);
extern void curl_url_cleanup(CURLU *handle);
extern int curl_url_set(CURLU *handle, int what, const char *part, unsigned int flags);
extern int curl_url_get(CURLU *handle, int what, char **part, unsigned int flags);
extern void curl_free(void *p);

bool CFURLSessionCurlHostIsEqual(const char *url, const char *expectedHost) {
    bool isEqual = false;
    CURLU *h = curl_url();
    if (h == NULL) return false;
    if (curl_url_set(h, SOAK_CURLUPART_URL, url, 0) == 0) {
        char *curlHost = NULL;
        if (curl_url_get(h, SOAK_CURLUPART_HOST, &curlHost, 0) == 0) {
            isEqual = strcmp(curlHost, expectedHost) == 0;
            curl_free(curlHost);
        }
    }
    curl_url_cleanup(h);
    return isEqual;
}
