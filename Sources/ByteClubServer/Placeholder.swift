// ByteClubServer
