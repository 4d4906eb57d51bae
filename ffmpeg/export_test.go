package ffmpeg

// ProbeFile is probe, for the tests.
var ProbeFile = probe
