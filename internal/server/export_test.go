package server

// UploadLocksFor is uploadLocks, for the tests of package server_test.
var UploadLocksFor = uploadLocks
