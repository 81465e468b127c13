// FerryEngine
