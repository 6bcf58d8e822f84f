# The on-call page (daemon/server/page/*) embedded into a target at build time (cmake/embed_assets.cmake).
set(FAULTLINE_PAGE_DIR ${CMAKE_SOURCE_DIR}/daemon/server/page)
set(FAULTLINE_PAGE_FILES index.html page.css page.js)

function(faultline_embed_page target)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/generated/${target}_page_assets.cpp)
  set(deps "")
  foreach(f ${FAULTLINE_PAGE_FILES})
    list(APPEND deps ${FAULTLINE_PAGE_DIR}/${f})
  endforeach()
  string(REPLACE ";" "|" files_arg "${FAULTLINE_PAGE_FILES}")  # a list cannot cross the command line as it is
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out} -DBASE=${FAULTLINE_PAGE_DIR} "-DFILES=${files_arg}"
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_assets.cmake
    DEPENDS ${deps} ${CMAKE_SOURCE_DIR}/cmake/embed_assets.cmake
    COMMENT "Embedding the incident page"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
