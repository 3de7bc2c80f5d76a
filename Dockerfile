# The assessd image: one static binary for serve, worker and migrate, and
# poppler-utils (pdfinfo, pdftoppm), which serve uses to check uploaded PDF
# answer-sheet scans and the workers to split them into pages.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /assessd ./cmd/assessd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends poppler-utils \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --no-create-home nonroot
COPY --from=build /assessd /assessd
USER 65532
ENTRYPOINT ["/assessd"]
