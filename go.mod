module github.com/formd/formd

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/nyaruka/phonenumbers v1.8.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/text v0.44.0
)

require google.golang.org/protobuf v1.36.12 // indirect
