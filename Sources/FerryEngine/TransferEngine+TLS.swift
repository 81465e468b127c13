import FerryCore
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// What the engine keeps about TLS across transfers: identities read from disk, each host's
/// trust verdict, the client-certificate answers, and the callbacks AsyncHTTPClient pools
/// connections by (it tells TLS configurations apart by their callbacks' identity, so one
/// callback per host keeps that host's connections pooled together).
final class TLSState: Sendable {
    struct HostKey: Hashable {
        var handler: ObjectIdentifier?
        var host: String
        var port: Int
    }

    /// A host's certificates as the session's delegate judged them.
    enum TrustDecision: Sendable {
        /// The standard rules apply.
        case standard
        /// The delegate accepted what the standard rules refused: these become trust anchors
        /// for the host's connections, whose name is then not checked.
        case trustPresented([NIOSSLCertificate])
    }

    struct LoadedIdentity: Sendable {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
    }

    let identities = NIOLockedValueBox<[ClientIdentity: LoadedIdentity]>([:])
    let trust = NIOLockedValueBox<[HostKey: Task<TrustDecision, any Error>]>([:])
    let settledTrust = NIOLockedValueBox<[HostKey: TrustDecision]>([:])
    let certificateAnswers = NIOLockedValueBox<[HostKey: Task<ConnectionChallengeAnswer, Never>]>([:])
    let certificateCallbacks = NIOLockedValueBox<[HostKey: NIOSSLContextCallback]>([:])

    /// `identity`'s certificates and key, read once.
    func load(_ identity: ClientIdentity, url: URL) throws -> LoadedIdentity {
        if let loaded = identities.withLockedValue({ $0[identity] }) { return loaded }
        let loaded: LoadedIdentity
        do {
            switch identity.source {
            case .pem(let chainFile, let keyFile):
                let chain = try NIOSSLCertificate.fromPEMFile(chainFile)
                let key = try identity.passphrase.map { passphrase in
                    try NIOSSLPrivateKey(file: keyFile, format: .pem) { (set: NIOSSLPassphraseSetter<[UInt8]>) in set(Array(passphrase.utf8)) }
                } ?? NIOSSLPrivateKey(file: keyFile, format: .pem)
                loaded = LoadedIdentity(chain: chain, key: key)
            case .pkcs12(let file):
                let bundle = try NIOSSLPKCS12Bundle(file: file, passphrase: identity.passphrase.map { Array($0.utf8) })
                loaded = LoadedIdentity(chain: bundle.certificateChain, key: bundle.privateKey)
            }
        } catch {
            throw FerryError(.secureConnectionFailed, "cannot read the \(identity): \(error)", url: url, underlying: error)
        }
        guard !loaded.chain.isEmpty else {
            throw FerryError(.secureConnectionFailed, "the \(identity) holds no certificate", url: url)
        }
        identities.withLockedValue { $0[identity] = loaded }
        return loaded
    }
}

/// The delegate cancelled a client-certificate challenge: the handshake fails with this.
struct ClientCertificateChallengeCancelled: Error {}

extension TransferEngine {
    /// The TLS configuration of a request of `transfer` to `url`, or nil for the client's own:
    /// more trusted authorities, a client identity, a client-certificate callback asking the
    /// session's handler, the certificates its delegate accepted for the host.
    func tlsConfiguration(for url: URL, transfer: Transfer) throws -> TLSConfiguration? {
        let handler = transfer.connectionChallenges
        let key = TLSState.HostKey(handler: handler.map(ObjectIdentifier.init), host: url.host?.lowercased() ?? "", port: url.port ?? 443)
        let decision = tls.settledTrust.withLockedValue { $0[key] }
        let identity = transfer.clientIdentity ?? configuration.clientIdentity
        if transfer.additionalTrustedCertificateFiles.isEmpty, transfer.clientIdentity == nil, handler == nil, decision == nil {
            return nil
        }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.additionalTrustRoots = (configuration.additionalTrustedCertificateFiles + transfer.additionalTrustedCertificateFiles).map { .file($0) }
        if let identity {
            let loaded = try tls.load(identity, url: url)
            tlsConfiguration.certificateChain = loaded.chain.map { .certificate($0) }
            tlsConfiguration.privateKey = .privateKey(loaded.key)
        }
        if case .trustPresented(let certificates) = decision {
            tlsConfiguration.additionalTrustRoots.append(.certificates(certificates))
            tlsConfiguration.certificateVerification = .noHostnameVerification
        }
        if let handler {
            tlsConfiguration.sslContextCallback = certificateCallback(key: key, handler: handler, url: url)
        }
        return tlsConfiguration
    }

    /// Before `transfer`'s first request to an HTTPS host, when its session's handler
    /// evaluates server trust: shows the host's certificates to the handler, once per host.
    /// Throws when the handler refuses them. Not through a proxy (the probe connects directly).
    func evaluateServerTrust(for url: URL, transfer: Transfer) async throws {
        guard url.scheme?.lowercased() == "https", let handler = transfer.connectionChallenges, handler.evaluatesServerTrust,
            transfer.proxies?.server(for: url) == nil, let host = url.host?.lowercased()
        else { return }
        let port = url.port ?? 443
        let key = TLSState.HostKey(handler: ObjectIdentifier(handler), host: host, port: port)
        let job = tls.trust.withLockedValue { jobs in
            if let running = jobs[key] { return running }
            let base = try? self.tlsConfiguration(for: url, transfer: transfer)
            let made = Task { () throws -> TLSState.TrustDecision in
                var probing = base ?? TLSConfiguration.makeClientConfiguration()
                probing.sslContextCallback = nil
                let trust = try await ServerTrustProbe.probe(host: host, port: port, configuration: probing)
                let space = ProtectionSpace(host: host, port: port, scheme: "https", realm: nil, method: .serverTrust)
                switch await handler.connectionDidReceive(challenge: ConnectionChallenge(protectionSpace: space, serverTrust: trust)) {
                case .performDefaultHandling, .useIdentity:
                    return .standard
                case .trustServer:
                    if trust.isTrustedByDefault { return .standard }
                    return .trustPresented(trust.certificates.compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) })
                case .cancel, .rejectProtectionSpace:
                    throw FerryError(.userCancelledAuthentication, "the delegate refused the certificate of \(host):\(port)", url: url)
                }
            }
            jobs[key] = made
            return made
        }
        do {
            let decision = try await job.value
            tls.settledTrust.withLockedValue { $0[key] = decision }
        } catch {
            // A refusal stands for the session; a probe that could not connect is tried again.
            if (error as? FerryError)?.code != .userCancelledAuthentication {
                tls.trust.withLockedValue { $0[key] = nil }
            }
            throw FerryError.from(error, url: url)
        }
    }

    /// The callback that answers a server's request for a client certificate on a connection
    /// to the host of `key`: the handler is asked once per host, its answer kept.
    private func certificateCallback(key: TLSState.HostKey, handler: any ConnectionChallengeHandler, url: URL) -> NIOSSLContextCallback {
        tls.certificateCallbacks.withLockedValue { callbacks in
            if let made = callbacks[key] { return made }
            let state = tls
            let made: NIOSSLContextCallback = { _, promise in
                let answer = state.certificateAnswers.withLockedValue { answers in
                    if let asked = answers[key] { return asked }
                    let space = ProtectionSpace(host: key.host, port: key.port, scheme: "https", realm: nil, method: .clientCertificate)
                    let asking = Task { await handler.connectionDidReceive(challenge: ConnectionChallenge(protectionSpace: space)) }
                    answers[key] = asking
                    return asking
                }
                Task {
                    var change = NIOSSLContextConfigurationOverride()
                    switch await answer.value {
                    case .useIdentity(let identity):
                        do {
                            let loaded = try state.load(identity, url: url)
                            change.certificateChain = loaded.chain.map { .certificate($0) }
                            change.privateKey = .privateKey(loaded.key)
                        } catch {
                            return promise.fail(error)
                        }
                    case .performDefaultHandling, .rejectProtectionSpace, .trustServer:
                        break  // the configuration holds the session's own identity, if any
                    case .cancel:
                        return promise.fail(ClientCertificateChallengeCancelled())
                    }
                    promise.succeed(change)
                }
            }
            callbacks[key] = made
            return made
        }
    }
}
