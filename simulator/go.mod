module gpu-lab/simulator

go 1.25.0

require github.com/vmware/govmomi v0.56.0

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
