# install(SCRIPT) helper: installs deploy/systemd/faultline.service with ExecStart naming the
# binary under the install-time prefix (CMAKE_INSTALL_PREFIX here is the one in force when
# installing, e.g. from `cmake --install --prefix`), honouring DESTDIR like file(INSTALL).
if(NOT FAULTLINE_UNIT_SOURCE)
  message(FATAL_ERROR "FAULTLINE_UNIT_SOURCE is not set")
endif()
file(READ "${FAULTLINE_UNIT_SOURCE}" _unit)
string(REPLACE "/usr/bin/faultline" "${CMAKE_INSTALL_PREFIX}/bin/faultline" _unit "${_unit}")
set(_dest "${CMAKE_INSTALL_PREFIX}/lib/systemd/system/faultline.service")
message(STATUS "Installing: $ENV{DESTDIR}${_dest}")
file(WRITE "$ENV{DESTDIR}${_dest}" "${_unit}")
file(CHMOD "$ENV{DESTDIR}${_dest}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_dest}")
