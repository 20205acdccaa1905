package api

// Info is the answer of GET /v1/info.
type Info struct {
	Version   string          `json:"version"`
	Driver    string          `json:"driver"`
	Isolation string          `json:"isolation"`
	Degraded  []string        `json:"degraded"`
	Templates []string        `json:"templates"`
	Limits    InfoLimits      `json:"limits"`
	Features  map[string]bool `json:"features"`
}

// InfoLimits are the server's defaults and ceilings.
type InfoLimits struct {
	Default        Limits `json:"default"`
	Max            Limits `json:"max"`
	MaxTimeoutS    int    `json:"max_timeout_s"`
	MaxFileBytes   int64  `json:"max_file_bytes"`
	MaxOutputBytes int    `json:"max_output_bytes"`
}

// Error is the one error shape of the API.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody carries a stable code and a message a person can act on.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
