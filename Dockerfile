# The assessd image: one static binary for serve, worker and migrate.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /assessd ./cmd/assessd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /assessd /assessd
USER nonroot
ENTRYPOINT ["/assessd"]
