// FerryTestSupport
