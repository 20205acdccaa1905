package layer

// EntryName is entryName, for the fuzz test.
var EntryName = entryName
