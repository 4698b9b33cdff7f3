# Operator metrics: the exposition text (built from a real Pipeline driven by
# hand-made packets, tests/dataplane/packet_builder) and the HTTP server.
serene_add_test(metrics_exposition_test
  SOURCES metrics_exposition_test.cc ${PROJECT_SOURCE_DIR}/tests/dataplane/packet_builder.cc
  LIBS serene_switch)

# Links httplib itself for httplib::Client. metrics_access_test.cc: the token
# and the bounded connection queue.
serene_add_test(metrics_http_test
  SOURCES metrics_http_test.cc metrics_access_test.cc
  LIBS serene_switch PkgConfig::HTTPLIB)
