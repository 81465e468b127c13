import FerryStore
import Testing
