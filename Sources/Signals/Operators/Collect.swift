extension Signal {
    /// Collects every value and sends them as one array when the upstream finishes.
    ///
    /// A failure is passed on and the collected values are dropped.
    public func collect() -> Signal<[Output], Failure> {
        let body = self.body
        return Signal<[Output], Failure>(unchecked: { observer, token in
            let buffer = LockedValue<[Output]>([])
            body(Observer { event in
                switch event {
                case .value(let value):
                    buffer.withLock { $0.append(value) }
                case .finished:
                    let values = buffer.withLock { buffer -> [Output] in
                        defer { buffer = [] }
                        return buffer
                    }
                    observer.send(values)
                    observer.finish()
                case .failed(let error):
                    buffer.withLock { $0 = [] }
                    observer.fail(error)
                }
            }, token)
        })
    }
}
