// Package server implements the dataservice gRPC backend: the
// network.DataService API over a SQLite player store, plus the standard gRPC
// health and reflection services.
//
// Start runs a complete server in-process, which is how the example game
// loop, the benchmarks and the tests use it:
//
//	srv, err := server.Start(ctx, server.Options{})
//	if err != nil {
//		return err
//	}
//	defer srv.Stop()
//	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
//
// Programs that already own a *grpc.Server can instead register a Service
// created by NewService.
package server
