// The value types shared with the engine (Request, Response, HeaderFields, FerryError,
// RetryPolicy, UploadBody) are part of Ferry's API; re-export them so `import Ferry` suffices.
@_exported public import FerryEngine
