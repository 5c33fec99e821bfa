// Everything of herd's net layer.
#pragma once
#include <herd/net/buffer.hpp>
#include <herd/net/listener.hpp>
#include <herd/net/memory_transport.hpp>
#include <herd/net/protocol.hpp>
#include <herd/net/result.hpp>
#include <herd/net/tcp.hpp>
#include <herd/net/transport.hpp>
