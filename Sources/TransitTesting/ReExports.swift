// The recorder and marble diagrams for signals live in SignalsTesting (they know no HTTP); a
// test that imports TransitTesting gets them too.
@_exported import SignalsTesting
