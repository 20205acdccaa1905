package httpapi

// pumpAhead is how many events a handler's sandbox.Pump holds that the
// handler has not taken: enough to overlap reading and writing, few
// enough that a slow client holds little (an output event carries at most
// a few hundred KiB).
const pumpAhead = 4
