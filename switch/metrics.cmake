# Operator metrics: Prometheus text exposition (metrics_exposition.cc) served
# over HTTP (metrics_http.cc, cpp-httplib). Part of serene_switch; httplib is
# private to metrics_http.cc, so includers of the headers do not see it.
target_sources(serene_switch PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/bounded_task_queue.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_exposition.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_http.cc)
target_link_libraries(serene_switch PRIVATE PkgConfig::HTTPLIB)
