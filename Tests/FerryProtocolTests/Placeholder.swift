import FerryProtocol
import Testing
