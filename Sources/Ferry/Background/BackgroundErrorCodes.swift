public import FerryEngine

// The codes only background sessions report, kept with them rather than in the engine (which
// runs one transfer and knows nothing of ferryd). Named as URLError names them.
extension FerryError.Code {
    /// Another process already owns this background session.
    ///
    /// ```swift
    /// catch let error as FerryError where error.code == .backgroundSessionInUseByAnotherProcess { … }
    /// ```
    public static let backgroundSessionInUseByAnotherProcess = Self(named: "backgroundSessionInUseByAnotherProcess")
    /// The background session lost its connection to ferryd (it stopped or was killed);
    /// the tasks go on there, and creating the session again reconnects to them.
    public static let backgroundSessionWasDisconnected = Self(named: "backgroundSessionWasDisconnected")
    /// The session names a shared container (app group) this process's app is not in,
    /// or ferryd could not be reached or started.
    public static let backgroundSessionRequiresSharedContainer = Self(named: "backgroundSessionRequiresSharedContainer")
    /// The configuration sets something ferryd cannot honour for a background session
    /// (``Configuration/backgroundRefusal``): said when the session is made, not ignored.
    public static let unsupportedBackgroundConfiguration = Self(named: "unsupportedBackgroundConfiguration")
}
