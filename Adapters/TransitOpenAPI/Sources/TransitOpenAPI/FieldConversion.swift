import Foundation
import HTTPTypes
import Transit

/// Header fields between swift-http-types and Transit, both ways, losslessly: every field in its
/// order, a repeated field as many times as it came, each name in the spelling it was given
/// (names compare case-insensitively on both sides).
enum FieldConversion {
    /// The fields of a generated request, as Transit sends them.
    static func transitFields(_ fields: HTTPFields) -> [Transit.HTTPField] {
        var converted: [Transit.HTTPField] = []
        converted.reserveCapacity(fields.count)
        for field in fields {
            converted.append(Transit.HTTPField(name: field.name.rawName, value: field.value))
        }
        return converted
    }

    /// The fields of a response Transit received, as a generated client reads them.
    ///
    /// A field whose name is not an HTTP token cannot be represented by swift-http-types; no
    /// transport delivers one (each refuses such a response), so none is dropped in practice.
    static func httpFields(_ fields: [Transit.HTTPField]) -> HTTPFields {
        var converted = HTTPFields()
        converted.reserveCapacity(fields.count)
        for field in fields {
            guard let name = HTTPTypes.HTTPField.Name(field.name) else { continue }
            converted.append(HTTPTypes.HTTPField(name: name, value: field.value))
        }
        return converted
    }

    /// The response head as swift-http-types' response: the status and every field.
    static func response(_ head: HTTPResponseHead) throws(TransitOpenAPIError) -> HTTPTypes.HTTPResponse {
        guard (100...999).contains(head.statusCode) else { throw .invalidStatusCode(head.statusCode) }
        return HTTPTypes.HTTPResponse(
            status: HTTPTypes.HTTPResponse.Status(code: head.statusCode),
            headerFields: httpFields(head.fields)
        )
    }

    /// The URL of an operation: the server URL, then the operation's path and query (as the
    /// generated client percent-encoded them). A trailing slash of the server URL's path is not
    /// doubled.
    static func url(baseURL: URL, path: String?) throws(TransitOpenAPIError) -> URL {
        let path = path ?? ""
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false),
              let operation = URLComponents(string: path)
        else { throw .invalidURL(baseURL: baseURL.absoluteString, path: path) }
        var basePath = components.percentEncodedPath
        if basePath.hasSuffix("/"), operation.percentEncodedPath.hasPrefix("/") { basePath.removeLast() }
        components.percentEncodedPath = basePath + operation.percentEncodedPath
        components.percentEncodedQuery = operation.percentEncodedQuery
        guard let url = components.url else { throw .invalidURL(baseURL: baseURL.absoluteString, path: path) }
        return url
    }
}
