# Install rules and the .deb package for the files under deploy/. The top-level CMakeLists.txt
# includes this after its own install() rules and before add_subdirectory(tests):
#
#   include(deploy/install.cmake)
#
# Installs (prefix /usr, as the .deb does):
#   /usr/lib/systemd/system/faultline.service        ExecStart rewritten to <prefix>/bin/faultline
#   /usr/share/faultline/systemd/kmsg.conf           optional drop-in (kernel log)
#   /usr/share/faultline/grafana/faultline.json      dashboard
#   /usr/share/faultline/prometheus/alerts.yaml      when deploy/prometheus/alerts.yaml exists
#   /etc/faultline/config.yaml                       from deploy/config.example.yaml when it exists
#   the man page, the bash and zsh completions and the documentation (below)
# and configures CPack: `cpack -G DEB` in the build tree makes faultline_<version>_<arch>.deb.
include(GNUInstallDirs)

set(FAULTLINE_DEPLOY_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FAULTLINE_DEPLOY_INSTALL ON)

# The unit names /usr/bin/faultline; another install prefix gets its own path, at install time
# (cmake --install --prefix may differ from the configured prefix).
install(CODE "set(FAULTLINE_UNIT_SOURCE \"${FAULTLINE_DEPLOY_DIR}/systemd/faultline.service\")")
install(SCRIPT ${FAULTLINE_DEPLOY_DIR}/cmake/install-systemd-unit.cmake)

install(FILES ${FAULTLINE_DEPLOY_DIR}/systemd/kmsg.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline/systemd)
install(FILES ${FAULTLINE_DEPLOY_DIR}/systemd/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline/systemd)
install(FILES ${FAULTLINE_DEPLOY_DIR}/grafana/faultline.json DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline/grafana)
install(FILES ${FAULTLINE_DEPLOY_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME DEPLOY.md)
if(EXISTS ${FAULTLINE_DEPLOY_DIR}/prometheus/alerts.yaml)
  install(FILES ${FAULTLINE_DEPLOY_DIR}/prometheus/alerts.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline/prometheus)
endif()
if(EXISTS ${FAULTLINE_DEPLOY_DIR}/config.example.yaml)
  install(FILES ${FAULTLINE_DEPLOY_DIR}/config.example.yaml
          DESTINATION /etc/faultline RENAME config.yaml)  # the unit reads /etc/faultline/config.yaml whatever the prefix
  install(FILES ${FAULTLINE_DEPLOY_DIR}/config.example.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline)
endif()

# The man page and the bash/zsh completions, generated from the built binary's help text (scripts/manpage.py), and
# the documentation the help text points to:
#   /usr/share/man/man1/faultline.1
#   /usr/share/bash-completion/completions/faultline
#   /usr/share/zsh/vendor-completions/_faultline
#   /usr/share/doc/faultline/{README.md,docs/*.md,rules/README.md}
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND NOT CMAKE_CROSSCOMPILING)
  set(_faultline_gen ${CMAKE_BINARY_DIR}/generated)
  add_custom_command(
    OUTPUT ${_faultline_gen}/faultline.1 ${_faultline_gen}/faultline.bash ${_faultline_gen}/_faultline
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/manpage.py $<TARGET_FILE:faultline>
            --man ${_faultline_gen}/faultline.1 --bash ${_faultline_gen}/faultline.bash --zsh ${_faultline_gen}/_faultline
    DEPENDS faultline ${CMAKE_SOURCE_DIR}/scripts/manpage.py
    COMMENT "man page and shell completions from faultline's help text")
  add_custom_target(faultline_manpage ALL
                    DEPENDS ${_faultline_gen}/faultline.1 ${_faultline_gen}/faultline.bash ${_faultline_gen}/_faultline)
  install(FILES ${_faultline_gen}/faultline.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${_faultline_gen}/faultline.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME faultline)
  install(FILES ${_faultline_gen}/_faultline DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
endif()
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(FILES ${CMAKE_SOURCE_DIR}/rules/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/rules)

# --- .deb ------------------------------------------------------------------------------------
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "faultline")
set(CPACK_PACKAGE_VENDOR "faultline")
set(CPACK_PACKAGE_CONTACT "faultline maintainers <maintainers@faultline.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "log-fingerprinting alerting daemon for GPU inference serving")
set(CPACK_PACKAGE_DESCRIPTION "faultline turns inference-server logs (vLLM, TensorRT-LLM, SGLang) and the kernel log into typed incidents, exported as Prometheus metrics and delivered to Alertmanager or webhooks.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Depends: computed from the binary's shared libraries by dpkg-shlibdeps (package dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ca-certificates")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(_faultline_control ${FAULTLINE_DEPLOY_DIR}/debian/postinst ${FAULTLINE_DEPLOY_DIR}/debian/prerm
    ${FAULTLINE_DEPLOY_DIR}/debian/postrm)
if(EXISTS ${FAULTLINE_DEPLOY_DIR}/config.example.yaml)
  list(APPEND _faultline_control ${FAULTLINE_DEPLOY_DIR}/debian/conffiles)
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${_faultline_control}")
include(CPack)
