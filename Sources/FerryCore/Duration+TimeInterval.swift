extension Duration {
    /// Seconds as a `Double` (a `TimeInterval`; attosecond precision lost below the nanosecond),
    /// for dates and JSON.
    ///
    /// ```swift
    /// let at = now.addingTimeInterval(delay.timeInterval)
    /// ```
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
