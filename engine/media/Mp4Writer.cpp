#include "engine/media/Mp4Writer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#ifdef FLOWSCOPE_HAVE_LIBAV
#include <dlfcn.h>

#include <utility>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}
#endif

namespace flowscope {

#ifdef FLOWSCOPE_HAVE_LIBAV

namespace {

// --- FFmpeg, loaded on first use ---
// The binaries do not link FFmpeg: its four libraries pull in about 130 more (every codec, TLS, Kerberos,
// cairo...), whose loading and relocation cost every process ~0.1 s at start-up, MP4 or not (flowscope-cli
// --version, each UI test). They are opened with dlopen by the soname of the headers built against (the
// same ABI), the first time an MP4 is written, and the functions used are looked up once.
#define FLOWSCOPE_LIBAV_FUNCTIONS(X)                                                                         \
    X(avutil, av_d2q)                                                                                        \
    X(avutil, av_dict_free)                                                                                  \
    X(avutil, av_dict_set)                                                                                   \
    X(avutil, av_frame_alloc)                                                                                \
    X(avutil, av_frame_free)                                                                                 \
    X(avutil, av_frame_get_buffer)                                                                           \
    X(avutil, av_frame_make_writable)                                                                        \
    X(avutil, av_log_get_level)                                                                              \
    X(avutil, av_log_set_level)                                                                              \
    X(avutil, av_strerror)                                                                                   \
    X(swscale, sws_freeContext)                                                                              \
    X(swscale, sws_getCoefficients)                                                                          \
    X(swscale, sws_getContext)                                                                               \
    X(swscale, sws_scale)                                                                                    \
    X(swscale, sws_setColorspaceDetails)                                                                     \
    X(avcodec, av_packet_alloc)                                                                              \
    X(avcodec, av_packet_free)                                                                               \
    X(avcodec, av_packet_rescale_ts)                                                                         \
    X(avcodec, avcodec_alloc_context3)                                                                       \
    X(avcodec, avcodec_find_encoder)                                                                         \
    X(avcodec, avcodec_find_encoder_by_name)                                                                 \
    X(avcodec, avcodec_free_context)                                                                         \
    X(avcodec, avcodec_open2)                                                                                \
    X(avcodec, avcodec_parameters_from_context)                                                              \
    X(avcodec, avcodec_receive_packet)                                                                       \
    X(avcodec, avcodec_send_frame)                                                                           \
    X(avformat, av_interleaved_write_frame)                                                                  \
    X(avformat, av_write_trailer)                                                                            \
    X(avformat, avformat_alloc_output_context2)                                                              \
    X(avformat, avformat_free_context)                                                                       \
    X(avformat, avformat_new_stream)                                                                         \
    X(avformat, avformat_write_header)                                                                       \
    X(avformat, avio_closep)                                                                                 \
    X(avformat, avio_open)

struct Libav {
#define FLOWSCOPE_LIBAV_POINTER(lib, name) decltype(&::name) name = nullptr;
    FLOWSCOPE_LIBAV_FUNCTIONS(FLOWSCOPE_LIBAV_POINTER)
#undef FLOWSCOPE_LIBAV_POINTER
    std::string error; // why the libraries could not be used; empty when every function was found
};

// The libraries' sonames, e.g. "libavcodec.so.59" for FFmpeg 5.1's headers.
std::string soname(const char* lib, int major) {
    return "lib" + std::string(lib) + ".so." + std::to_string(major);
}

Libav openLibav() {
    Libav av;
    // Dependencies first; each stays loaded for the life of the process.
    const std::pair<const char*, int> libs[] = {{"avutil", LIBAVUTIL_VERSION_MAJOR},
                                                {"swscale", LIBSWSCALE_VERSION_MAJOR},
                                                {"avcodec", LIBAVCODEC_VERSION_MAJOR},
                                                {"avformat", LIBAVFORMAT_VERSION_MAJOR}};
    void* handles[4] = {};
    for (int i = 0; i < 4; ++i) {
        const std::string name = soname(libs[i].first, libs[i].second);
        handles[i] = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char* why = dlerror();
            av.error = "cannot load " + name + " (" + (why ? why : "not found") + "); Debian: apt install";
            for (const auto& [lib, major] : libs)
                av.error += " lib" + std::string(lib) + std::to_string(major);
            return av;
        }
    }
    auto handle = [&](const char* lib) {
        for (int i = 0; i < 4; ++i)
            if (std::strcmp(libs[i].first, lib) == 0) return handles[i];
        return static_cast<void*>(nullptr);
    };
#define FLOWSCOPE_LIBAV_LOOKUP(lib, fn)                                                                      \
    av.fn = reinterpret_cast<decltype(av.fn)>(dlsym(handle(#lib), #fn));                                     \
    if (!av.fn && av.error.empty()) av.error = "lib" #lib " has no " #fn;
    FLOWSCOPE_LIBAV_FUNCTIONS(FLOWSCOPE_LIBAV_LOOKUP)
#undef FLOWSCOPE_LIBAV_LOOKUP
    return av;
}

// The loaded functions, or nullptr with `error` set. Never freed: a writer destroyed during static
// destruction still finds them.
const Libav* libav(std::string* error = nullptr) {
    static const Libav* av = new Libav(openLibav());
    if (error) *error = av->error;
    return av->error.empty() ? av : nullptr;
}

std::string avError(const Libav& av, int rc) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av.av_strerror(rc, buf, sizeof buf);
    return buf;
}

const AVCodec* h264Encoder(const Libav& av) {
    if (const AVCodec* c = av.avcodec_find_encoder_by_name("libx264")) return c;
    return av.avcodec_find_encoder(AV_CODEC_ID_H264);
}

} // namespace

// Owns the libav objects and the temporary file, which it removes unless the writer committed it.
struct Mp4Writer::State {
    explicit State(const Libav& functions) : av(functions) {}
    const Libav& av;
    std::string tmp;
    AVFormatContext* format = nullptr;
    AVCodecContext* codec = nullptr;
    AVStream* stream = nullptr;
    SwsContext* sws = nullptr;
    AVFrame* frame = nullptr;
    AVPacket* packet = nullptr;
    std::vector<std::uint8_t> padded; // odd sizes: the frame with its last column and row repeated
    int encodedWidth = 0, encodedHeight = 0;
    bool fileOpen = false, fileCreated = false, committed = false;

    ~State() {
        av.sws_freeContext(sws);
        av.av_frame_free(&frame);
        av.av_packet_free(&packet);
        av.avcodec_free_context(&codec);
        if (format) {
            if (fileOpen) av.avio_closep(&format->pb);
            av.avformat_free_context(format);
        }
        if (fileCreated && !committed) std::remove(tmp.c_str());
    }

    // Sends a frame (nullptr: flush) to the encoder and muxes every packet it has ready.
    void encode(AVFrame* frame, const std::string& path) {
        int rc = av.avcodec_send_frame(codec, frame);
        if (rc < 0)
            throw std::runtime_error("writing MP4 " + path + ": encoder refused a frame (" + avError(av, rc) +
                                     ")");
        for (;;) {
            rc = av.avcodec_receive_packet(codec, packet);
            if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
            if (rc < 0)
                throw std::runtime_error("writing MP4 " + path + ": encoding failed (" + avError(av, rc) +
                                         ")");
            // The muxer may have chosen a finer time base for the stream (avformat_write_header).
            av.av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
            packet->stream_index = stream->index;
            rc = av.av_interleaved_write_frame(format, packet); // takes the packet's data, leaves it blank
            if (rc < 0) throw std::runtime_error("writing MP4 " + path + " failed (" + avError(av, rc) + ")");
        }
    }
};

Mp4Writer::Mp4Writer(const std::string& path, int width, int height, const Mp4Options& options)
    : path_(path), width_(width), height_(height) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
        throw std::invalid_argument("MP4 " + path + ": frame size " + std::to_string(width) + "x" +
                                    std::to_string(height) + " is outside 1..16384");
    if (!(options.fps > 0) || !std::isfinite(options.fps) || options.fps > 1000)
        throw std::invalid_argument("MP4 " + path + ": fps must be in (0, 1000]");
    if (options.crf < 0 || options.crf > 51)
        throw std::invalid_argument("MP4 " + path + ": crf must be 0..51, not " +
                                    std::to_string(options.crf));
    std::string missing;
    const Libav* loaded = libav(&missing);
    if (!loaded) throw std::runtime_error("cannot write MP4 " + path + ": " + missing);
    const Libav& av = *loaded;
    auto fail = [&](const std::string& what, int rc = 0) {
        throw std::runtime_error("cannot write MP4 " + path + ": " + what +
                                 (rc < 0 ? " (" + avError(av, rc) + ")" : ""));
    };
    // x264 reports its settings and statistics at the info level; keep stderr for errors unless the
    // application chose a log level of its own.
    if (av.av_log_get_level() == AV_LOG_INFO) av.av_log_set_level(AV_LOG_ERROR);

    auto s = std::make_unique<State>(av);
    s->tmp = temporaryPathFor(path);
    const AVCodec* encoder = h264Encoder(av);
    if (!encoder) fail("this libavcodec has no H.264 encoder");
    // The container is named explicitly: the temporary file's name does not end in .mp4.
    int rc = av.avformat_alloc_output_context2(&s->format, nullptr, "mp4", s->tmp.c_str());
    if (rc < 0 || !s->format) fail("no MP4 muxer", rc);
    s->stream = av.avformat_new_stream(s->format, nullptr);
    s->codec = av.avcodec_alloc_context3(encoder);
    if (!s->stream || !s->codec) fail("out of memory");

    s->encodedWidth = width + (width & 1);
    s->encodedHeight = height + (height & 1);
    const AVRational rate = av.av_d2q(options.fps, 100000); // 30 -> 30/1, 29.97002997 -> 30000/1001
    AVCodecContext* c = s->codec;
    c->width = s->encodedWidth;
    c->height = s->encodedHeight;
    c->pix_fmt = AV_PIX_FMT_YUV420P;
    c->time_base = av_inv_q(rate);
    c->framerate = rate;
    c->color_range = AVCOL_RANGE_MPEG;
    c->colorspace = AVCOL_SPC_BT709;
    c->color_primaries = AVCOL_PRI_BT709;
    c->color_trc = AVCOL_TRC_BT709;
    c->thread_count = 0; // one per core (libavcodec's default is a single thread)
    if (s->format->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary* codecOptions = nullptr;
    av.av_dict_set(&codecOptions, "crf", std::to_string(options.crf).c_str(), 0); // libx264's private option
    rc = av.avcodec_open2(c, encoder, &codecOptions);
    av.av_dict_free(&codecOptions);
    if (rc < 0) fail(std::string("cannot open the H.264 encoder ") + encoder->name, rc);
    rc = av.avcodec_parameters_from_context(s->stream->codecpar, c);
    if (rc < 0) fail("cannot set the stream parameters", rc);
    s->stream->time_base = c->time_base;
    s->stream->avg_frame_rate = rate;
    s->stream->r_frame_rate = rate;

    rc = av.avio_open(&s->format->pb, s->tmp.c_str(), AVIO_FLAG_WRITE);
    if (rc < 0) fail("cannot create " + s->tmp, rc);
    s->fileOpen = s->fileCreated = true;
    AVDictionary* muxOptions = nullptr;
    av.av_dict_set(&muxOptions, "movflags", "+faststart", 0);
    rc = av.avformat_write_header(s->format, &muxOptions);
    av.av_dict_free(&muxOptions);
    if (rc < 0) fail("cannot write the MP4 header", rc);

    s->frame = av.av_frame_alloc();
    s->packet = av.av_packet_alloc();
    if (!s->frame || !s->packet) fail("out of memory");
    s->frame->format = c->pix_fmt;
    s->frame->width = c->width;
    s->frame->height = c->height;
    s->frame->color_range = c->color_range;
    s->frame->colorspace = c->colorspace;
    rc = av.av_frame_get_buffer(s->frame, 0);
    if (rc < 0) fail("cannot allocate a frame", rc);
    s->sws = av.sws_getContext(c->width, c->height, AV_PIX_FMT_RGBA, c->width, c->height, AV_PIX_FMT_YUV420P,
                               SWS_AREA | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, nullptr, nullptr, nullptr);
    // Chroma is averaged from full-resolution input (FULL_CHR_H_INP, AREA): on small saturated particles that
    // keeps up to 0.8 dB more than libswscale's default over the RGBA -> yuv420p -> RGBA round trip.
    if (!s->sws) fail("cannot create the RGBA to yuv420p converter");
    // RGB (full range) to BT.709 limited-range YUV, as tagged on the stream.
    const int* bt709 = av.sws_getCoefficients(SWS_CS_ITU709);
    av.sws_setColorspaceDetails(s->sws, bt709, 1, bt709, 0, 0, 1 << 16, 1 << 16);
    if (width != s->encodedWidth || height != s->encodedHeight)
        s->padded.resize(std::size_t(s->encodedWidth) * std::size_t(s->encodedHeight) * 4);
    state_ = std::move(s);
}

Mp4Writer::~Mp4Writer() = default; // State removes the temporary file unless finish() committed it

std::string Mp4Writer::unavailableReason() {
    std::string why;
    const Libav* av = libav(&why);
    if (!av) return why;
    return h264Encoder(*av) ? "" : "this libavcodec has no H.264 encoder";
}

void Mp4Writer::addFrame(const std::uint8_t* rgba, int strideBytes) {
    if (finished_) throw std::logic_error("MP4 " + path_ + ": addFrame after finish");
    if (!rgba || strideBytes < 4 * width_)
        throw std::invalid_argument("MP4 " + path_ + ": bad frame (stride " + std::to_string(strideBytes) +
                                    " for width " + std::to_string(width_) + ")");
    State& s = *state_;
    const Libav& av = s.av;
    const std::uint8_t* src = rgba;
    int stride = strideBytes;
    if (!s.padded.empty()) {
        const std::size_t row = std::size_t(s.encodedWidth) * 4;
        for (int y = 0; y < s.encodedHeight; ++y) {
            const std::uint8_t* in = rgba + std::size_t(std::min(y, height_ - 1)) * std::size_t(strideBytes);
            std::uint8_t* out = &s.padded[std::size_t(y) * row];
            std::memcpy(out, in, std::size_t(width_) * 4);
            if (s.encodedWidth > width_) std::memcpy(out + 4 * width_, in + 4 * (width_ - 1), 4);
        }
        src = s.padded.data();
        stride = int(row);
    }
    // The encoder may still hold the previous frame's buffer: get a writable one.
    int rc = av.av_frame_make_writable(s.frame);
    if (rc < 0)
        throw std::runtime_error("writing MP4 " + path_ + ": cannot get a frame buffer (" + avError(av, rc) +
                                 ")");
    av.sws_scale(s.sws, &src, &stride, 0, s.encodedHeight, s.frame->data, s.frame->linesize);
    s.frame->pts = frames_;
    s.encode(s.frame, path_);
    ++frames_;
}

void Mp4Writer::finish() {
    if (finished_) throw std::logic_error("MP4 " + path_ + ": finish called twice");
    if (frames_ == 0) throw std::runtime_error("MP4 " + path_ + ": no frames were added");
    State& s = *state_;
    const Libav& av = s.av;
    s.encode(nullptr, path_);               // drain the frames x264 holds for lookahead and B-frames
    int rc = av.av_write_trailer(s.format); // with +faststart this rewrites the file with the index first
    if (rc < 0)
        throw std::runtime_error("writing MP4 " + path_ + ": cannot finish the file (" + avError(av, rc) +
                                 ")");
    rc = av.avio_closep(&s.format->pb);
    s.fileOpen = false;
    if (rc < 0) throw std::runtime_error("writing MP4 " + path_ + " failed (" + avError(av, rc) + ")");
    if (std::rename(s.tmp.c_str(), path_.c_str()) != 0)
        throw std::runtime_error("cannot rename " + s.tmp + " to MP4 " + path_ + " (" + std::strerror(errno) +
                                 ")");
    s.committed = true;
    finished_ = true;
}

#else // no libav: the format is known but cannot be written

struct Mp4Writer::State {};

Mp4Writer::Mp4Writer(const std::string& path, int width, int height, const Mp4Options&)
    : path_(path), width_(width), height_(height) {
    throw std::runtime_error(
        "cannot write MP4 " + path +
        ": this build has no MP4 support (libavcodec, libavformat, libswscale and libavutil "
        "were missing at build time; Debian: libavcodec-dev libavformat-dev libswscale-dev "
        "libavutil-dev)");
}

Mp4Writer::~Mp4Writer() = default;

std::string Mp4Writer::unavailableReason() {
    return "this build has no MP4 support (libav was missing at build time)";
}

void Mp4Writer::addFrame(const std::uint8_t*, int) {
    throw std::logic_error("MP4 " + path_ + ": no MP4 support");
}

void Mp4Writer::finish() {
    throw std::logic_error("MP4 " + path_ + ": no MP4 support");
}

#endif

} // namespace flowscope
